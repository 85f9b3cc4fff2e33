//! Statistical core (issue 3).
