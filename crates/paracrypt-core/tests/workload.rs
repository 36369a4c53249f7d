//! The benchmark workloads: every one prepares, runs in memory and file to file without an
//! error, and a file run writes as many bytes as it reports. Their output is not checked here
//! (the ciphers and the container are, in `raw/` and `container/`), and timing is never
//! asserted.

use std::io::Write;

use paracrypt_core::plan::ChunkSize;
use paracrypt_core::workload::Symmetric;

#[test]
fn every_symmetric_workload_runs_in_memory_and_file_to_file() {
    for workload in Symmetric::all() {
        assert_eq!(Symmetric::from_name(&workload.name()), Some(workload));
        let chunk = ChunkSize::new(16 * 1024).unwrap();
        let mut prepared = workload.prepare(100_000, chunk).unwrap();
        prepared.run_in_memory().unwrap();
        prepared.run_in_memory().unwrap();
        let mut input = tempfile::tempfile().unwrap();
        input.write_all(prepared.input()).unwrap();
        let output = tempfile::tempfile().unwrap();
        let written = prepared.run_file(&input, &output).unwrap();
        assert_eq!(
            output.metadata().unwrap().len(),
            written,
            "{}",
            workload.name()
        );
    }
    assert_eq!(
        Symmetric::from_name("raw/aes-256-ctr"),
        Symmetric::from_name("raw/aes-256-ctr/encrypt")
    );
    assert!(Symmetric::from_name("raw/nope").is_none());
}
