//! Placeholder until the public-key benches land (helper writes this file).
fn main() {}
