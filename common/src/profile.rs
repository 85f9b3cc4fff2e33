//! Filled by issue 4 (profile format and lookup).
