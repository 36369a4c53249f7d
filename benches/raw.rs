//! Raw cipher throughput: every cipher and mode on a 64 MiB buffer in memory, on one thread and
//! on every thread. `cargo bench --bench raw [-- FILTER]`.
//!
//! The 2-thread/1-thread ratios behind the README's table come from here; the targets are not
//! tests.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use paracrypt::raw::{Direction, RawCipher, RawCipherName};

const SIZE: usize = 64 << 20;
const CHUNK: usize = 1 << 20;

fn cipher(name: RawCipherName) -> RawCipher {
    let (min, max) = name.algorithm().key_lengths();
    let key = vec![0x42; if min == max { min } else { 16 }];
    let iv = vec![0x24; name.iv_len()];
    let iv = (name.iv_len() > 0).then_some(&iv[..]);
    RawCipher::new(name, &key, iv).unwrap().with_padding(false)
}

fn raw(c: &mut Criterion) {
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut threads = vec![1];
    if all > 1 {
        threads.push(all);
    }
    let mut buf = vec![0u8; SIZE];
    for &name in RawCipherName::ALL {
        let mut group = c.benchmark_group(format!("raw/{name}"));
        group.throughput(Throughput::Bytes(SIZE as u64));
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(5));
        group.warm_up_time(Duration::from_millis(500));
        let cipher = cipher(name);
        let mut directions = vec![Direction::Encrypt];
        if name.encrypts_in_parallel() != name.decrypts_in_parallel() {
            directions.push(Direction::Decrypt);
        }
        for direction in directions {
            let label = match direction {
                Direction::Encrypt => "encrypt",
                Direction::Decrypt => "decrypt",
            };
            for &n in &threads {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build()
                    .unwrap();
                group.bench_with_input(BenchmarkId::new(label, format!("{n}t")), &n, |b, _| {
                    b.iter(|| {
                        pool.install(|| cipher.process_vec(direction, &mut buf, CHUNK))
                            .unwrap()
                    })
                });
            }
        }
        group.finish();
    }
}

criterion_group!(benches, raw);
criterion_main!(benches);
