//! raw tests
