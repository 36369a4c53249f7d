//! Symmetric throughput in memory: every raw cipher and mode, every container suite and age
//! files on a 64 MiB buffer, on one thread and on every thread (`Throughput::Bytes`).
//!
//! `cargo bench --bench symmetric [-- raw/aes-256-ctr]`. The workloads are
//! `paracrypt_bench::symmetric::Symmetric`, the same ones `paracrypt bench` runs. The
//! 2-thread/1-thread ratios in docs/guide/performance.md come from here; the targets are not tests.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use paracrypt::plan::ChunkSize;
use paracrypt_bench::symmetric::Symmetric;

const SIZE: usize = 64 << 20;

fn symmetric(c: &mut Criterion) {
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads: Vec<usize> = if all > 1 { vec![1, all] } else { vec![1] };
    for workload in Symmetric::all() {
        let mut group = c.benchmark_group(workload.name());
        group.throughput(Throughput::Bytes(SIZE as u64));
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(4));
        group.warm_up_time(Duration::from_millis(300));
        let mut prepared = workload.prepare(SIZE, ChunkSize::DEFAULT).unwrap();
        for &n in &threads {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .unwrap();
            group.bench_function(BenchmarkId::new("threads", n), |b| {
                b.iter(|| pool.install(|| prepared.run_in_memory()).unwrap())
            });
        }
        group.finish();
    }
}

criterion_group!(benches, symmetric);
criterion_main!(benches);
