//! End-to-end tests of mpiover live in `tests/e2e/` (one integration-test binary).
