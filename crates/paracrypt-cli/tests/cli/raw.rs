//! raw CLI tests (filled below)
