//! The job: one value per input that every driver runs — its plan, its transform and its
//! header — and what the positional engine says when a chunk fails.

use paracrypt_core::container::{Decryptor, Encryptor, HEADER_LEN, HeaderInfo};
use paracrypt_core::engine::{self, SliceSink, SliceSource};
use paracrypt_core::plan::ChunkSize;
use paracrypt_core::provider::Provider;
use paracrypt_core::raw::{Direction, RawCipherName};
use paracrypt_core::{Error, ErrorKind, Recipe, Runner};

/// The job `recipe` makes for an input that starts with `start` and is `len` bytes long, on
/// the default provider.
fn first_job(recipe: &dyn Recipe, start: &[u8], len: Option<u64>) -> engine::Job {
    recipe
        .first_job(&mut &start[..], len, Provider::default())
        .unwrap()
}

use crate::container::{key, temp_with};
use crate::raw::{chunk_size, cipher, data, with_threads};

/// A recipe that makes its job only on `RustCrypto`, around another.
struct OnRustCrypto<R>(R);

impl<R: Recipe> Recipe for OnRustCrypto<R> {
    fn first_job(
        &self,
        input: &mut dyn std::io::BufRead,
        input_len: Option<u64>,
        provider: Provider,
    ) -> paracrypt_core::Result<engine::Job> {
        match provider {
            Provider::RustCrypto => self.0.first_job(input, input_len, provider),
            other => Err(Error::UnknownProvider {
                name: other.to_string(),
                valid: "rustcrypto".into(),
                note: String::new(),
            }),
        }
    }

    fn job_from_header(
        &self,
        _: &[u8],
        _: Option<&[u8]>,
        _: Option<u64>,
        _: Provider,
    ) -> paracrypt_core::Result<engine::Job> {
        unreachable!("no driver of a runner makes a job from a header alone")
    }
}

#[test]
fn every_driver_hands_the_runner_s_provider_to_the_recipe() {
    use std::io::Write;
    let plain = data(10_000, 5);
    let (seal, open) = (
        OnRustCrypto(Encryptor::new(key())),
        OnRustCrypto(Decryptor::new(key())),
    );
    assert!(matches!(
        Runner::new().vec(&seal, &plain),
        Err(Error::UnknownProvider { .. })
    ));
    let runner = Runner::new().provider(Provider::RustCrypto);
    let sealed = runner.vec(&seal, &plain).unwrap();
    assert!(runner.vec(&open, &sealed).unwrap() == plain);
    let mut streamed = Vec::new();
    runner
        .stream(&seal, &mut &plain[..], &mut streamed)
        .unwrap();
    let (input, output) = (tempfile::tempfile().unwrap(), tempfile::tempfile().unwrap());
    std::os::unix::fs::FileExt::write_all_at(&input, &streamed, 0).unwrap();
    assert_eq!(
        runner.file(&open, &input, &output).unwrap(),
        plain.len() as u64
    );
    let mut part = Vec::new();
    runner.range(&open, &input, 100, 10, &mut part).unwrap();
    assert!(part == plain[100..110]);
    let mut writer = runner.writer(&seal, Vec::new()).unwrap();
    writer.write_all(&plain).unwrap();
    assert!(runner.vec(&open, &writer.finish().unwrap()).unwrap() == plain);
}

#[test]
fn a_job_runs_again_with_the_same_bytes_serial_ones_too() {
    // CBC encryption and RC4 carry state from chunk to chunk: a second run starts over.
    for name in [RawCipherName::Aes128Cbc, RawCipherName::Rc4] {
        let input = data(50_000, 1);
        let recipe = cipher(name).recipe(Direction::Encrypt, chunk_size(4096));
        let job = first_job(&recipe, &[], Some(input.len() as u64));
        assert!(!job.is_parallel(), "{name}");
        let (mut first, mut second) = (Vec::new(), Vec::new());
        engine::run_in_memory(&job, &input, &mut first).unwrap();
        with_threads(3, || engine::run_in_memory(&job, &input, &mut second)).unwrap();
        assert!(first == second, "{name}: a second run differs");
        let mut in_place = input.clone();
        engine::process_in_place(&job, &mut in_place).unwrap();
        assert!(in_place == first, "{name}: in place differs");
    }
}

#[test]
fn the_container_job_carries_its_header_and_plan() {
    let plain = data(10_000, 2);
    let encryptor = Encryptor::new(key()).chunk_size(chunk_size(4096));
    let job = first_job(&encryptor, &[], Some(plain.len() as u64));
    assert_eq!(job.header().len(), HEADER_LEN);
    assert_eq!(
        job.output_header(),
        job.header(),
        "sealing writes the header"
    );
    assert_eq!(job.plan().unwrap().len(), 3);
    let mut sealed = Vec::new();
    engine::run_in_memory(&job, &plain, &mut sealed).unwrap();
    assert_eq!(&sealed[..HEADER_LEN], job.header());

    // Another process makes the same job from the header alone.
    let again = encryptor
        .job_from_header(
            job.header(),
            None,
            Some(plain.len() as u64),
            Provider::default(),
        )
        .unwrap();
    assert_eq!(again.header(), job.header());
    assert_eq!(again.plan(), job.plan());
    let mut resealed = Vec::new();
    engine::run_in_memory(&again, &plain, &mut resealed).unwrap();
    assert!(resealed == sealed);

    let open = first_job(
        &Decryptor::new(key()),
        job.header(),
        Some(sealed.len() as u64),
    );
    assert!(open.output_header().is_empty(), "opening reads the header");
    let mut opened = Vec::new();
    engine::run_in_memory(&open, &sealed, &mut opened).unwrap();
    assert!(opened == plain);

    // A job for a stream has no plan: its length is found as it ends.
    assert!(first_job(&encryptor, &[], None).plan().is_none());
}

#[test]
fn the_engine_names_the_lowest_failing_chunk() {
    let chunk = 4096;
    let plain = data(20 * chunk, 3);
    let sealed = Runner::new()
        .vec(&Encryptor::new(key()).chunk_size(chunk_size(chunk)), &plain)
        .unwrap();
    let mut tampered = sealed.clone();
    for bad in [13, 6, 17] {
        tampered[HEADER_LEN + bad * (chunk + 16) + 5] ^= 1;
    }
    let job = first_job(
        &Decryptor::new(key()),
        &tampered,
        Some(tampered.len() as u64),
    );
    let plan = job.plan().unwrap();
    for threads in [1, 2, 5] {
        for range in [0..plan.len(), 7..plan.len(), 10..14] {
            let mut out = vec![0u8; plan.output_len() as usize];
            let base = plan.chunk(range.start).output.start as usize;
            let sink = SliceSink::new(plan, range.clone(), &mut out[base..]);
            let failed = with_threads(threads, || {
                engine::run(&job, range.clone(), &SliceSource(&tampered), &sink)
            })
            .unwrap_err();
            let lowest = [13, 6, 17]
                .into_iter()
                .filter(|&i| range.contains(&i))
                .min()
                .unwrap();
            assert_eq!(failed.index, lowest, "{threads} threads, {range:?}");
            assert!(matches!(failed.source, Error::ChunkAuth { index } if index == lowest));
            assert_eq!(failed.kind(), ErrorKind::Data);
            assert_eq!(failed.to_string(), failed.source.to_string());
        }
    }
}

#[test]
fn the_largest_chunk_size_is_accepted_with_its_framing() {
    // 1 GiB of plaintext per chunk is the documented maximum; its sealed chunk (plus the tag)
    // is larger, and that is fine.
    let max = ChunkSize::new(1 << 30).unwrap();
    assert_eq!(max, ChunkSize::MAX);
    let job = first_job(&Encryptor::new(key()).chunk_size(max), &[], Some(3 << 30));
    let plan = job.plan().unwrap();
    assert_eq!(plan.len(), 3);
    assert_eq!(
        plan.chunk(1).output.start,
        HEADER_LEN as u64 + (1 << 30) + 16
    );
    assert_eq!(HeaderInfo::parse(job.header()).unwrap().chunk_size, max);
    let sealed_len = plan.output_len();
    let open = first_job(&Decryptor::new(key()), job.header(), Some(sealed_len));
    assert_eq!(open.plan().unwrap().output_len(), 3 << 30);
    let raw = cipher(RawCipherName::Aes256Ctr).recipe(Direction::Encrypt, max);
    assert!(first_job(&raw, &[], Some(1 << 31)).plan().is_some());

    // A small input runs with it too (buffers follow the input, not the chunk size).
    let plain = data(5000, 4);
    let sealed = Runner::new()
        .vec(&Encryptor::new(key()).chunk_size(max), &plain)
        .unwrap();
    assert_eq!(
        Runner::new().vec(&Decryptor::new(key()), &sealed).unwrap(),
        plain
    );
}

/// A parallel transform whose chunks grow: each byte XORed with the chunk index, then the
/// first 8 bytes of its 16-byte context appended (8 × 0xEE for chunk 0); chunks listed in
/// `fail` fail.
struct Appends {
    fail: Vec<u64>,
}

impl engine::ChunkTransform for Appends {
    fn context_len(&self) -> usize {
        16
    }

    fn transform(
        &self,
        chunk: &engine::ChunkCtx<'_>,
        buf: &mut [u8],
        input_len: usize,
    ) -> paracrypt_core::Result<usize> {
        if self.fail.contains(&chunk.index) {
            return Err(Error::ChunkAuth { index: chunk.index });
        }
        buf[..input_len]
            .iter_mut()
            .for_each(|b| *b ^= chunk.index as u8);
        let appended = match chunk.context {
            [] => [0xEE; 8],
            context => context[..8].try_into().unwrap(),
        };
        buf[input_len..input_len + 8].copy_from_slice(&appended);
        Ok(input_len + 8)
    }
}

#[test]
fn in_memory_a_growing_job_gives_what_the_positional_engine_gives() {
    use paracrypt_core::engine::{Job, Transform};
    use paracrypt_core::plan::{ChunkLayout, Tail};
    // `run_in_memory` seals chunks that only grow in their output slots, with the context
    // read from the input; `run` goes through a buffer per thread. Same bytes, same failure.
    let chunk = 4096;
    let layout = ChunkLayout::framed(0, chunk, 5, chunk + 8, Tail::Fixed).unwrap();
    let job = |len: usize, fail: Vec<u64>| {
        Job::new(layout, Transform::parallel(Appends { fail }))
            .with_input_len(len as u64)
            .unwrap()
            .with_header(&b"head!"[..])
    };
    for len in [0, 1, chunk - 1, chunk, chunk + 1, 7 * chunk + 100] {
        let input = data(len, 4);
        let job = job(len, Vec::new());
        let plan = job.plan().unwrap();
        let mut expected = vec![0u8; plan.output_len() as usize];
        expected[..5].copy_from_slice(b"head!");
        let sink = SliceSink::new(plan, 0..plan.len(), &mut expected[5..]);
        let end = engine::run(&job, 0..plan.len(), &SliceSource(&input), &sink).unwrap();
        expected.truncate(end.unwrap() as usize);
        for i in 1..plan.len() as usize {
            let at = 5 + i * (chunk + 8) + (len - i * chunk).min(chunk);
            assert_eq!(expected[at..at + 8], input[i * chunk - 16..i * chunk - 8]);
        }
        for threads in [1, 3] {
            let mut out = vec![0xAA; 3];
            with_threads(threads, || engine::run_in_memory(&job, &input, &mut out)).unwrap();
            assert!(out == expected, "{len} bytes, {threads} threads");
        }
    }
    let input = data(20 * chunk, 5);
    let job = job(input.len(), vec![13, 6, 17]);
    for threads in [1, 2, 5] {
        let failed = with_threads(threads, || {
            engine::run_in_memory(&job, &input, &mut Vec::new())
        })
        .unwrap_err();
        assert_eq!(failed.index, 6, "{threads} threads");
        assert!(matches!(failed.source, Error::ChunkAuth { index: 6 }));
    }
}

/// A parallel transform whose chunks shrink, in place only: each byte XORed with the chunk
/// index, the last 8 bytes dropped.
struct Drops;

impl engine::ChunkTransform for Drops {
    fn transform(
        &self,
        chunk: &engine::ChunkCtx<'_>,
        buf: &mut [u8],
        input_len: usize,
    ) -> paracrypt_core::Result<usize> {
        let kept = input_len
            .checked_sub(8)
            .ok_or(Error::Truncated { index: chunk.index })?;
        buf[..kept].iter_mut().for_each(|b| *b ^= chunk.index as u8);
        Ok(kept)
    }
}

#[test]
fn in_memory_a_shrinking_job_without_a_one_pass_transform_gives_what_the_positional_engine_gives() {
    use paracrypt_core::engine::{Job, Transform};
    use paracrypt_core::plan::{ChunkLayout, Tail};
    // `run_in_memory` hands every chunk to `transform_to` with its output slot, shorter than
    // the chunk: a transform with no one-pass path runs in the thread's scratch buffer.
    let chunk = 4096;
    let layout = ChunkLayout::framed(5, chunk + 8, 0, chunk, Tail::Fixed).unwrap();
    for plain in [8, 9, chunk + 8, chunk + 8 + 9, 7 * (chunk + 8) + 100] {
        let input = [&b"head!"[..], &data(plain, 6)].concat();
        let job = Job::new(layout, Transform::parallel(Drops))
            .with_input_len(input.len() as u64)
            .unwrap()
            .with_header(&b"head!"[..]);
        let plan = job.plan().unwrap();
        let mut expected = vec![0u8; plan.output_len() as usize];
        let sink = SliceSink::new(plan, 0..plan.len(), &mut expected[..]);
        let end = engine::run(&job, 0..plan.len(), &SliceSource(&input), &sink).unwrap();
        expected.truncate(end.unwrap() as usize);
        assert_eq!(expected.len(), plain - 8 * plan.len() as usize);
        for threads in [1, 3] {
            let mut out = Vec::new();
            with_threads(threads, || engine::run_in_memory(&job, &input, &mut out)).unwrap();
            assert!(out == expected, "{plain} bytes, {threads} threads");
        }
    }
}

/// A source that records what runs announce they will read.
struct Announced<'a> {
    inner: SliceSource<'a>,
    hints: std::sync::Mutex<Vec<std::ops::Range<u64>>>,
}

impl engine::Source for Announced<'_> {
    fn read_chunk(&self, index: u64, offset: u64, buf: &mut [u8]) -> paracrypt_core::Result<()> {
        self.inner.read_chunk(index, offset, buf)
    }

    fn will_read(&self, bytes: std::ops::Range<u64>) {
        self.hints.lock().unwrap().push(bytes);
    }
}

/// Every positional run tells its source which input bytes it will read — a run's chunks and
/// the context bytes before them — once, before reading: what a source that fetches ahead
/// (ranged GETs from object storage) fetches, and nothing else.
#[test]
fn a_run_announces_the_bytes_it_will_read() {
    let plain = data(10 * 4096 + 100, 9);
    let sealed = Runner::new()
        .vec(&Encryptor::new(key()).chunk_size(chunk_size(4096)), &plain)
        .unwrap();
    let job = first_job(&Decryptor::new(key()), &sealed, Some(sealed.len() as u64));
    let plan = job.plan().unwrap().clone();
    let source = Announced {
        inner: SliceSource(&sealed),
        hints: std::sync::Mutex::default(),
    };
    let mut out = Vec::new();
    engine::run_to_buffer(&job, 3..7, &source, &mut out).unwrap();
    let want = plan.chunk(3).input.start..plan.chunk(6).input.end;
    assert_eq!(
        source.hints.lock().unwrap().as_slice(),
        std::slice::from_ref(&want)
    );

    // CBC decryption reads one block of context before each chunk: announced too.
    let name: RawCipherName = "aes-128-cbc".parse().unwrap();
    let recipe = cipher(name).recipe(Direction::Decrypt, chunk_size(4096));
    let input = data(10 * 4096, 3);
    let job = first_job(&recipe, &[], Some(input.len() as u64));
    let source = Announced {
        inner: SliceSource(&input),
        hints: std::sync::Mutex::default(),
    };
    engine::run_to_buffer(&job, 2..4, &source, &mut out).unwrap();
    let want = 2 * 4096 - 16..4 * 4096;
    assert_eq!(
        source.hints.lock().unwrap().as_slice(),
        std::slice::from_ref(&want)
    );
}

/// Every way a run of chunks is computed, for `recipe`, which decrypts `sealed` into `plain`
/// (sealed by `sealer`): in memory, file to file, file to an ordered output, stream to stream (the default window and one
/// of a single chunk), over ranges that cross tasks, and in parts as MPI ranks and multipart
/// uploads make them; and `sealer` as a `Write` adapter fed in odd pieces.
fn every_driver_opens(
    sealer: &dyn Recipe,
    recipe: &dyn Recipe,
    sealed: &[u8],
    plain: &[u8],
    what: &str,
) {
    use std::io::Write;
    let runner = Runner::new();
    assert!(
        runner.vec(recipe, sealed).unwrap() == plain,
        "{what}: in memory"
    );
    for window in [0, 1] {
        let mut out = Vec::new();
        (runner.clone().window(window))
            .stream(recipe, &mut &sealed[..], &mut out)
            .unwrap();
        assert!(out == plain, "{what}: stream, window {window}");
    }
    let (input, output) = (tempfile::tempfile().unwrap(), tempfile::tempfile().unwrap());
    std::os::unix::fs::FileExt::write_all_at(&input, sealed, 0).unwrap();
    assert_eq!(
        runner.file(recipe, &input, &output).unwrap(),
        plain.len() as u64
    );
    let mut written = vec![0u8; plain.len()];
    std::os::unix::fs::FileExt::read_exact_at(&output, &mut written, 0).unwrap();
    assert!(written == plain, "{what}: file to file");
    let mut ordered = Vec::new();
    assert_eq!(
        runner.file_to_writer(recipe, &input, &mut ordered).unwrap(),
        plain.len() as u64
    );
    assert!(ordered == plain, "{what}: file to an ordered output");
    let mut writer = runner.writer(sealer, Vec::new()).unwrap();
    for piece in plain.chunks(7919) {
        writer.write_all(piece).unwrap();
    }
    let written = writer.finish().unwrap();
    assert!(
        runner.vec(recipe, &written).unwrap() == plain,
        "{what}: Write adapter"
    );
    let len = plain.len() as u64;
    for (offset, n) in [
        (0, len),
        (len / 3, len / 2 + 1),
        (len.saturating_sub(5), 100),
    ] {
        let mut part = Vec::new();
        runner.range(recipe, &input, offset, n, &mut part).unwrap();
        let end = (offset + n).min(len) as usize;
        assert!(
            part == plain[offset as usize..end],
            "{what}: range {offset}+{n}"
        );
    }
    let job = first_job(recipe, sealed, Some(sealed.len() as u64));
    let plan = job.plan().unwrap();
    let mut parts = Vec::new();
    for part in 0..3 {
        let chunks = plan.block(part, 3);
        if chunks.is_empty() {
            continue;
        }
        let mut out = Vec::new();
        engine::run_to_buffer(&job, chunks, &SliceSource(sealed), &mut out).unwrap();
        parts.extend_from_slice(&out);
    }
    assert!(parts == plain, "{what}: three parts");
}

/// The sizes around the engine's tasks for `threads` threads and `chunk`-byte chunks: a task
/// carries `n / (4 × threads)` chunks of a run of `n` (fewer than `TASK_BYTES` holds here),
/// so these chunk counts end runs on a task boundary, one chunk past it and one chunk short of
/// it, each full, one byte short and one byte into the chunk.
fn task_boundary_sizes(threads: usize, chunk: usize) -> Vec<usize> {
    let per_round = 4 * threads;
    let mut sizes = vec![0, 1, chunk - 1, chunk, chunk + 1];
    for chunks in [
        per_round * 3 - 1,
        per_round * 3,
        per_round * 3 + 1,
        per_round * 5 + 2,
    ] {
        sizes.extend([chunks * chunk - 1, chunks * chunk, chunks * chunk + 1]);
    }
    sizes
}

#[test]
fn tasks_of_many_chunks_give_the_same_bytes_on_every_driver_at_task_boundaries() {
    // The container with 4 KiB chunks, sealed by one job on every positional way (the
    // reference: in memory on one thread, which runs chunk by chunk), then opened by every
    // driver. Each at 1, 2 and 3 threads.
    let chunk = 4096;
    for threads in [1, 2, 3] {
        for len in task_boundary_sizes(threads, chunk) {
            let plain = data(len, len as u32);
            let encryptor = Encryptor::new(key()).chunk_size(chunk_size(chunk));
            let job = first_job(&encryptor, &[], Some(len as u64));
            let plan = job.plan().unwrap();
            let mut expected = Vec::new();
            engine::run_in_memory(&job, &plain, &mut expected).unwrap();
            let what = format!("{len} bytes, {threads} threads");
            with_threads(threads, || {
                let mut sealed = vec![0u8; plan.output_len() as usize];
                sealed[..HEADER_LEN].copy_from_slice(job.header());
                let sink = SliceSink::new(plan, 0..plan.len(), &mut sealed[HEADER_LEN..]);
                engine::run(&job, 0..plan.len(), &SliceSource(&plain), &sink).unwrap();
                assert!(
                    sealed == expected,
                    "{what}: sealed through the positional engine"
                );
                let file = tempfile::tempfile().unwrap();
                engine::run_file(&job, &SliceSource(&plain), &file).unwrap();
                let mut from_file = vec![0u8; expected.len()];
                std::os::unix::fs::FileExt::read_exact_at(&file, &mut from_file, 0).unwrap();
                assert!(from_file == expected, "{what}: sealed file to file");
                every_driver_opens(&encryptor, &Decryptor::new(key()), &expected, &plain, &what);
            });
        }
    }
}

#[test]
fn age_files_give_the_same_bytes_on_every_driver_at_task_boundaries() {
    use std::sync::Arc;
    // age's chunks are 64 KiB: a task of several of them, at 1 and 3 threads.
    let identity = age::x25519::Identity::generate();
    let mut recipients = paracrypt_core::recipient::Recipients::new();
    recipients
        .add(&identity.to_public().to_string(), "recipient")
        .unwrap();
    let mut identities = paracrypt_core::recipient::Identities::new();
    let text = identity.to_string();
    identities
        .add_file(
            "identity",
            age::secrecy::ExposeSecret::expose_secret(&text).as_bytes(),
        )
        .unwrap();
    let (recipients, identities) = (Arc::new(recipients), Arc::new(identities));
    let chunk = 64 * 1024;
    for threads in [1, 3] {
        for chunks in [12 * threads - 1, 12 * threads + 1] {
            let len = chunks * chunk + 1;
            let plain = data(len, 9);
            let encryptor = paracrypt_core::agefile::Encryptor::new(recipients.clone());
            let sealed = with_threads(threads, || Runner::new().vec(&encryptor, &plain)).unwrap();
            let decryptor = paracrypt_core::agefile::Decryptor::new(identities.clone());
            let what = format!("age, {len} bytes, {threads} threads");
            with_threads(threads, || {
                every_driver_opens(&encryptor, &decryptor, &sealed, &plain, &what);
            });
        }
    }
}

/// A source and a sink that count their calls, around memory.
struct Counting<'a> {
    source: SliceSource<'a>,
    sink: SliceSink<'a>,
    reads: std::sync::atomic::AtomicUsize,
    writes: std::sync::atomic::AtomicUsize,
}

impl engine::Source for Counting<'_> {
    fn read_chunk(&self, index: u64, offset: u64, buf: &mut [u8]) -> paracrypt_core::Result<()> {
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.source.read_chunk(index, offset, buf)
    }
}

impl engine::Sink for Counting<'_> {
    fn write_chunk(&self, index: u64, offset: u64, data: &[u8]) -> paracrypt_core::Result<()> {
        self.writes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.sink.write_chunk(index, offset, data)
    }

    fn write_run(
        &self,
        plan: &paracrypt_core::plan::ChunkPlan,
        chunks: std::ops::Range<u64>,
        data: &[u8],
    ) -> paracrypt_core::Result<()> {
        self.writes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.sink.write_run(plan, chunks, data)
    }
}

#[test]
fn a_task_reads_and_writes_its_chunks_at_once_and_a_failure_inside_it_is_named() {
    // 1000 chunks of 4 KiB on 2 threads: tasks of 125 chunks (a run's 4 tasks per thread),
    // so 8 reads and 8 writes, not 1000 of each. The bytes are those of the chunk-by-chunk
    // in-memory run.
    let chunk = 4096;
    let plain = data(1000 * chunk, 12);
    let sealed = Runner::new()
        .vec(&Encryptor::new(key()).chunk_size(chunk_size(chunk)), &plain)
        .unwrap();
    let job = first_job(&Decryptor::new(key()), &sealed, Some(sealed.len() as u64));
    let plan = job.plan().unwrap();
    let mut out = vec![0u8; plain.len()];
    let counting = Counting {
        source: SliceSource(&sealed),
        sink: SliceSink::new(plan, 0..plan.len(), &mut out),
        reads: Default::default(),
        writes: Default::default(),
    };
    let end = with_threads(2, || engine::run(&job, 0..plan.len(), &counting, &counting));
    assert_eq!(end.unwrap(), Some(plain.len() as u64));
    let (reads, writes) = (counting.reads.into_inner(), counting.writes.into_inner());
    assert_eq!((reads, writes), (8, 8), "one read and one write per task");
    assert!(out == plain);

    // A chunk that fails inside a task: it is the one named, and every chunk below it (the
    // task's own before it too) is written.
    let mut tampered = sealed.clone();
    for bad in [300, 700] {
        tampered[HEADER_LEN + bad * (chunk + 16) + 9] ^= 1;
    }
    for threads in [1, 2, 3] {
        let mut out = vec![0xAA; plain.len()];
        let sink = SliceSink::new(plan, 0..plan.len(), &mut out);
        let failed = with_threads(threads, || {
            engine::run(&job, 0..plan.len(), &SliceSource(&tampered), &sink)
        })
        .unwrap_err();
        assert_eq!(failed.index, 300, "{threads} threads");
        assert!(matches!(failed.source, Error::ChunkAuth { index: 300 }));
        assert!(
            out[..300 * chunk] == plain[..300 * chunk],
            "{threads} threads"
        );
    }
}

#[test]
fn progress_counts_every_input_byte_file_to_file_as_a_stream_does() {
    use std::os::unix::fs::FileExt;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let plain = data(50_000, 9);
    let seal = Encryptor::new(key()).chunk_size(ChunkSize::new(4096).unwrap());
    let sealed = Runner::new().vec(&seal, &plain).unwrap();
    let counted = Arc::new(AtomicU64::new(0));
    let runner = {
        let counted = Arc::clone(&counted);
        Runner::new().progress(move |n| {
            counted.fetch_add(n, Ordering::Relaxed);
        })
    };
    let (input, output) = (tempfile::tempfile().unwrap(), tempfile::tempfile().unwrap());
    input.write_all_at(&sealed, 0).unwrap();
    runner
        .file(&Decryptor::new(key()), &input, &output)
        .unwrap();
    assert_eq!(counted.swap(0, Ordering::Relaxed), sealed.len() as u64);
    runner
        .stream(&Decryptor::new(key()), &mut &sealed[..], &mut Vec::new())
        .unwrap();
    assert_eq!(counted.load(Ordering::Relaxed), sealed.len() as u64);
}

#[test]
fn into_a_slice_the_in_memory_driver_gives_its_bytes_and_the_unpadded_end() {
    for (recipe, len) in [
        (
            Box::new(Encryptor::new(key()).chunk_size(chunk_size(1024))) as Box<dyn Recipe>,
            5000,
        ),
        (
            Box::new(cipher(RawCipherName::Aes128Cbc).recipe(Direction::Encrypt, chunk_size(64))),
            1000,
        ),
    ] {
        let plain = data(len, 3);
        let job = first_job(&*recipe, &[], Some(len as u64));
        let mut whole = Vec::new();
        engine::run_in_memory(&job, &plain, &mut whole).unwrap();
        let mut out = vec![0u8; job.plan().unwrap().output_len() as usize];
        let end = engine::run_into_slice(&job, &plain, &mut out).unwrap();
        assert_eq!(&out[..end as usize], &whole[..]);
    }
    // Decrypting CBC drops the padding: the end is short of the plan's bound.
    let cbc = cipher(RawCipherName::Aes128Cbc);
    let sealed = Runner::new()
        .vec(
            &cbc.recipe(Direction::Encrypt, chunk_size(64)),
            &data(1000, 4),
        )
        .unwrap();
    let job = first_job(
        &cbc.recipe(Direction::Decrypt, chunk_size(64)),
        &[],
        Some(sealed.len() as u64),
    );
    let mut out = vec![0u8; job.plan().unwrap().output_len() as usize];
    assert_eq!(out.len(), 1008);
    assert_eq!(
        engine::run_into_slice(&job, &sealed, &mut out).unwrap(),
        1000
    );
    assert_eq!(&out[..1000], &data(1000, 4)[..]);
}

/// A chunk that fails leaves nothing of its plaintext in the caller's buffer, even one that
/// authenticates where it does not stand: a file cut after chunk 2 opens chunk 2 as a last
/// chunk only by trying it as one (to name the cut), which writes its plaintext into its slot.
#[test]
fn into_a_slice_a_failed_chunk_leaves_nothing_of_it() {
    let plain: Vec<u8> = (0..5000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let seal = Encryptor::new(key()).chunk_size(chunk_size(1024));
    let sealed = Runner::new().vec(&seal, &plain).unwrap();
    let header = sealed.len() - 4 * 1040 - (5000 - 4096 + 16);
    let cut = &sealed[..header + 3 * 1040];
    for threads in [1, 3] {
        let job = first_job(&Decryptor::new(key()), cut, Some(cut.len() as u64));
        let mut out = vec![0u8; job.plan().unwrap().output_len() as usize];
        let err =
            with_threads(threads, || engine::run_into_slice(&job, cut, &mut out)).unwrap_err();
        assert!(
            matches!(err.source, Error::TruncatedAfter { index: 2 }),
            "{err}"
        );
        // The chunk that failed: wiped. (The ones before it are verified plaintext.)
        assert!(
            out[2048..3072].iter().all(|&b| b == 0),
            "chunk 2 left in the buffer"
        );
    }
}

#[test]
fn the_read_adapter_gives_what_the_other_drivers_give_and_stops_at_a_failing_chunk() {
    use paracrypt_core::StreamReader;
    use std::io::Read;
    let runner = Runner::new().window(3);
    let plain = data(40_000, 11);
    let seal = Encryptor::new(key())
        .chunk_size(chunk_size(1024))
        .fixed_salt_for_tests([7; 32]);
    let sealed = runner.vec(&seal, &plain).unwrap();
    // Sealing through the reader, read in odd sizes: the same bytes, header first.
    let mut reader = runner.reader(&seal, &plain[..]).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 777];
    loop {
        let n = reader.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    assert_eq!(out, sealed);
    // Opening, at 1 and 4 threads, and a serial job (CBC encryption).
    for threads in [1, 4] {
        let opened = with_threads(threads, || {
            let mut out = Vec::new();
            let open = Decryptor::new(key());
            runner
                .reader(&open, &sealed[..])
                .unwrap()
                .read_to_end(&mut out)
                .unwrap();
            out
        });
        assert_eq!(opened, plain);
    }
    let cbc = cipher(RawCipherName::Aes128Cbc).recipe(Direction::Encrypt, chunk_size(64));
    let mut out = Vec::new();
    runner
        .reader(&cbc, &plain[..])
        .unwrap()
        .read_to_end(&mut out)
        .unwrap();
    assert_eq!(out, runner.vec(&cbc, &plain).unwrap());
    // A damaged chunk 20: chunks 0 to 19 come out, then the chunk's error, and again after.
    let mut damaged = sealed.clone();
    damaged[HEADER_LEN + 20 * (1024 + 16) + 5] ^= 1;
    let mut reader = runner.reader(&Decryptor::new(key()), &damaged[..]).unwrap();
    let mut out = Vec::new();
    let error = reader.read_to_end(&mut out).unwrap_err();
    assert_eq!(out, &plain[..20 * 1024]);
    assert!(matches!(
        StreamReader::<&[u8]>::error_of(&error),
        Some(Error::ChunkAuth { index: 20 })
    ));
    assert!(reader.read(&mut [0u8; 10]).is_err());
    // A wrong key fails when the reader is made; a cut file at its end.
    assert!(matches!(
        runner.reader(
            &Decryptor::new(paracrypt_core::container::Key::generate()),
            &sealed[..]
        ),
        Err(Error::WrongKey)
    ));
    let cut = &sealed[..HEADER_LEN + 3 * (1024 + 16)];
    let error = runner
        .reader(&Decryptor::new(key()), cut)
        .unwrap()
        .read_to_end(&mut Vec::new())
        .unwrap_err();
    assert!(matches!(
        StreamReader::<&[u8]>::error_of(&error),
        Some(Error::TruncatedAfter { index: 2 })
    ));
}

/// A `Write` that counts its calls and can fail once it has taken `fail_after` bytes.
struct Pipe {
    out: Vec<u8>,
    writes: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    fail_after: Option<usize>,
    pause: std::time::Duration,
}

impl std::io::Write for Pipe {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self
            .fail_after
            .is_some_and(|limit| self.out.len() + data.len() > limit)
        {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        }
        // A slow reader at the other end: the workers run a window ahead of it.
        std::thread::sleep(self.pause);
        self.out.extend_from_slice(data);
        self.writes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A source over memory that counts its reads and remembers the most reads ever ahead of the
/// writes of `writes`.
struct Ahead<'a> {
    source: SliceSource<'a>,
    reads: std::sync::atomic::AtomicUsize,
    writes: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    most_ahead: std::sync::atomic::AtomicUsize,
}

impl engine::Source for Ahead<'_> {
    fn read_chunk(&self, index: u64, offset: u64, buf: &mut [u8]) -> paracrypt_core::Result<()> {
        use std::sync::atomic::Ordering::SeqCst;
        let reads = self.reads.fetch_add(1, SeqCst) + 1;
        let ahead = reads.saturating_sub(self.writes.load(SeqCst));
        self.most_ahead.fetch_max(ahead, SeqCst);
        self.source.read_chunk(index, offset, buf)
    }
}

#[test]
fn a_file_into_an_ordered_output_gives_the_bytes_in_order_within_a_window() {
    // 16 MiB in 4 KiB chunks (and the container's empty last one): 17 tasks of up to 256
    // chunks (1 MiB) on every thread count here. The output takes one task every 2 ms, so the workers run ahead of it: never by more than the
    // window of two tasks per thread (each task read once, each written once).
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let chunk = 4096;
    let plain = data(16 << 20, 21);
    let seal = Encryptor::new(key()).chunk_size(chunk_size(chunk));
    let sealed = Runner::new().vec(&seal, &plain).unwrap();
    let job = first_job(&Decryptor::new(key()), &sealed, Some(sealed.len() as u64));
    for threads in [1, 2, 3, 4] {
        let writes = Arc::new(AtomicUsize::new(0));
        let source = Ahead {
            source: SliceSource(&sealed),
            reads: AtomicUsize::new(0),
            writes: Arc::clone(&writes),
            most_ahead: AtomicUsize::new(0),
        };
        let mut pipe = Pipe {
            out: Vec::new(),
            writes: Arc::clone(&writes),
            fail_after: None,
            pause: std::time::Duration::from_millis(2),
        };
        let written =
            with_threads(threads, || engine::run_to_writer(&job, &source, &mut pipe)).unwrap();
        assert_eq!(written, plain.len() as u64);
        assert!(pipe.out == plain, "{threads} threads: the bytes, in order");
        let (reads, most_ahead) = (source.reads.into_inner(), source.most_ahead.into_inner());
        assert_eq!(
            (reads, writes.load(Ordering::SeqCst)),
            (17, 17),
            "{threads} threads: one read and one write per task"
        );
        assert!(
            most_ahead <= 2 * threads,
            "{threads} threads: {most_ahead} tasks read ahead of the output"
        );
    }
}

#[test]
fn a_file_into_an_ordered_output_stops_at_the_lowest_failing_chunk_or_a_failed_write() {
    // Chunks 300 and 700 of 1000 damaged: the output is exactly chunks 0..300, and chunk 300
    // is named, at every thread count; through the range driver too. A write that fails ends
    // the run with its error, whatever the workers were doing.
    let chunk = 4096;
    let plain = data(1000 * chunk, 22);
    let sealed = Runner::new()
        .vec(&Encryptor::new(key()).chunk_size(chunk_size(chunk)), &plain)
        .unwrap();
    let mut tampered = sealed.clone();
    for bad in [700, 300] {
        tampered[HEADER_LEN + bad * (chunk + 16) + 9] ^= 1;
    }
    let (input, damaged) = (temp_with(&sealed), temp_with(&tampered));
    let open = Decryptor::new(key());
    for threads in [1, 2, 3, 5] {
        let (out, error) = with_threads(threads, || {
            let mut out = Vec::new();
            let error = Runner::new()
                .file_to_writer(&open, &damaged, &mut out)
                .unwrap_err();
            (out, error)
        });
        assert!(
            matches!(error, Error::ChunkAuth { index: 300 }),
            "{threads}: {error}"
        );
        assert!(
            out == plain[..300 * chunk],
            "{threads} threads: only chunks 0..300"
        );
        let mut ranged = Vec::new();
        let error = with_threads(threads, || {
            Runner::new().range(&open, &damaged, 5 * chunk as u64, u64::MAX, &mut ranged)
        })
        .unwrap_err();
        assert!(
            matches!(error, Error::ChunkAuth { index: 300 }),
            "{threads}: {error}"
        );
        assert!(
            ranged == plain[5 * chunk..300 * chunk],
            "{threads} threads: range"
        );

        let mut pipe = Pipe {
            out: Vec::new(),
            writes: Default::default(),
            fail_after: Some(100 * chunk + 1),
            pause: std::time::Duration::ZERO,
        };
        let error = with_threads(threads, || {
            Runner::new().file_to_writer(&open, &input, &mut pipe)
        })
        .unwrap_err();
        assert!(
            matches!(&error, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe),
            "{threads}: {error}"
        );
        assert!(
            pipe.out == plain[..pipe.out.len()],
            "{threads} threads: a prefix"
        );
    }
}

/// A stream that counts the bytes it hands out, and fails once it has handed out `fail_at`.
struct Counted<'a> {
    data: &'a [u8],
    read: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    fail_at: Option<usize>,
}

impl std::io::Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::sync::atomic::Ordering::SeqCst;
        let at = self.read.load(SeqCst);
        if self.fail_at.is_some_and(|limit| at >= limit) {
            return Err(std::io::Error::other("the device went away"));
        }
        let limit = self.fail_at.unwrap_or(usize::MAX) - at;
        // Pieces of uneven size, as pipes give.
        let n = buf
            .len()
            .min(self.data.len())
            .min(limit)
            .min(40_000 + at % 30_011);
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        self.read.fetch_add(n, SeqCst);
        Ok(n)
    }
}

/// A `Write` that takes its time and remembers the most bytes ever read from `read` beyond
/// those it was given (`+ header` bytes that are not chunks).
struct SlowOut {
    out: Vec<u8>,
    read: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    most_ahead: usize,
}

impl std::io::Write for SlowOut {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        std::thread::sleep(std::time::Duration::from_millis(1));
        self.out.extend_from_slice(data);
        let read = self.read.load(std::sync::atomic::Ordering::SeqCst);
        self.most_ahead = self.most_ahead.max(read.saturating_sub(self.out.len()));
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_stream_runs_on_every_worker_within_a_window_ahead_of_its_output() {
    // Raw AES-CTR keeps lengths: 24 MiB + 5 in 64 KiB chunks, tasks of 1 MiB, read in uneven
    // pieces into a slow output. The bytes are the in-memory run's; the reader never runs more
    // than the window (two tasks per thread) and one byte of look-ahead ahead of the output.
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    let plain = data((24 << 20) + 5, 23);
    let recipe = cipher(RawCipherName::Aes128Ctr).recipe(Direction::Encrypt, chunk_size(64 << 10));
    let expected = Runner::new().vec(&recipe, &plain).unwrap();
    for threads in [1, 2, 3, 4] {
        let read = Arc::new(AtomicUsize::new(0));
        let mut input = Counted {
            data: &plain,
            read: Arc::clone(&read),
            fail_at: None,
        };
        let mut out = SlowOut {
            out: Vec::new(),
            read,
            most_ahead: 0,
        };
        let written = with_threads(threads, || {
            Runner::new().stream(&recipe, &mut input, &mut out)
        })
        .unwrap();
        assert_eq!(written, plain.len() as u64);
        assert!(
            out.out == expected,
            "{threads} threads: the bytes, in order"
        );
        let window = 2 * threads * (1 << 20) + 1;
        assert!(
            out.most_ahead <= window,
            "{threads} threads: read {} bytes ahead of the output",
            out.most_ahead
        );
    }
}

#[test]
fn a_stream_stops_at_the_lowest_failing_chunk_or_a_failed_read() {
    // Chunks 300 and 700 of 1000 damaged: exactly chunks 0..300 come out and chunk 300 is
    // named, at every thread count and window. A read that fails: the chunks read whole before
    // it come out, then the read's error naming its chunk.
    let chunk = 4096;
    let plain = data(1000 * chunk, 24);
    let sealed = Runner::new()
        .vec(&Encryptor::new(key()).chunk_size(chunk_size(chunk)), &plain)
        .unwrap();
    let mut tampered = sealed.clone();
    for bad in [700, 300] {
        tampered[HEADER_LEN + bad * (chunk + 16) + 9] ^= 1;
    }
    let open = Decryptor::new(key());
    for threads in [1, 2, 3, 5] {
        for window in [0, 1, 7, 64] {
            let runner = Runner::new().window(window);
            let what = format!("{threads} threads, window {window}");
            let mut out = Vec::new();
            let error = with_threads(threads, || {
                runner.stream(&open, &mut &tampered[..], &mut out)
            })
            .unwrap_err();
            assert!(
                matches!(error, Error::ChunkAuth { index: 300 }),
                "{what}: {error}"
            );
            assert!(out == plain[..300 * chunk], "{what}: only chunks 0..300");

            let mut input = Counted {
                data: &sealed,
                read: Default::default(),
                fail_at: Some(HEADER_LEN + 500 * (chunk + 16) + 77),
            };
            let mut out = Vec::new();
            let error =
                with_threads(threads, || runner.stream(&open, &mut input, &mut out)).unwrap_err();
            assert!(
                error.to_string().contains("reading chunk ") && error.kind() == ErrorKind::Io,
                "{what}: {error}"
            );
            assert!(
                out.len() % chunk == 0 && out.len() <= 500 * chunk && plain.starts_with(&out),
                "{what}: {} bytes out",
                out.len()
            );
        }
    }
}

/// A sink whose writes serialise, as a file's do, around memory: it counts writes made while
/// another was under way and writes made outside the pool's workers, and fails the write of
/// chunk `fail_at`.
struct OneAtATime<'a> {
    sink: SliceSink<'a>,
    writing: std::sync::atomic::AtomicBool,
    overlapping: std::sync::atomic::AtomicUsize,
    outside_the_pool: std::sync::atomic::AtomicUsize,
    fail_at: Option<u64>,
}

impl engine::Sink for OneAtATime<'_> {
    fn write_chunk(&self, index: u64, offset: u64, data: &[u8]) -> paracrypt_core::Result<()> {
        self.sink.write_chunk(index, offset, data)
    }

    fn write_run(
        &self,
        plan: &paracrypt_core::plan::ChunkPlan,
        chunks: std::ops::Range<u64>,
        data: &[u8],
    ) -> paracrypt_core::Result<()> {
        use std::sync::atomic::Ordering::SeqCst;
        if self.writing.swap(true, SeqCst) {
            self.overlapping.fetch_add(1, SeqCst);
        }
        if rayon::current_thread_index().is_none() {
            self.outside_the_pool.fetch_add(1, SeqCst);
        }
        // A slow disk: the workers fill every buffer and some wait for one.
        std::thread::sleep(std::time::Duration::from_millis(1));
        let result = match self.fail_at {
            Some(bad) if chunks.contains(&bad) => Err(Error::io(
                "writing",
                std::io::Error::other("the disk is full"),
            )),
            _ => self.sink.write_run(plan, chunks, data),
        };
        self.writing.store(false, SeqCst);
        result
    }

    fn single_writer(&self) -> bool {
        true
    }
}

#[test]
fn into_a_file_one_worker_at_a_time_writes_and_no_thread_is_set_aside() {
    // 4 MiB + 1 in 1 KiB chunks: tasks of 256 chunks or fewer, into a slow sink whose writes
    // serialise. Every byte arrives; writes never overlap; every write is made by a pool
    // worker. A write that fails ends the run with the lowest failing chunk named and every
    // chunk below it written.
    use std::sync::atomic::{AtomicBool, AtomicUsize};
    let chunk = 1024;
    let plain = data((4 << 20) + 1, 25);
    let recipe = cipher(RawCipherName::Aes128Ctr).recipe(Direction::Encrypt, chunk_size(chunk));
    let expected = Runner::new().vec(&recipe, &plain).unwrap();
    let job = first_job(&recipe, &[], Some(plain.len() as u64));
    let plan = job.plan().unwrap();
    for threads in [1, 2, 3, 5] {
        for fail_at in [None, Some(2000)] {
            let mut out = vec![0u8; plan.output_len() as usize];
            let sink = OneAtATime {
                sink: SliceSink::new(plan, 0..plan.len(), &mut out),
                writing: AtomicBool::new(false),
                overlapping: AtomicUsize::new(0),
                outside_the_pool: AtomicUsize::new(0),
                fail_at,
            };
            let result = with_threads(threads, || {
                engine::run(&job, 0..plan.len(), &SliceSource(&plain), &sink)
            });
            let what = format!("{threads} threads, failing at {fail_at:?}");
            assert_eq!(
                sink.overlapping.into_inner(),
                0,
                "{what}: writes overlapped"
            );
            assert_eq!(
                sink.outside_the_pool.into_inner(),
                0,
                "{what}: a writer thread"
            );
            match fail_at {
                None => {
                    assert_eq!(result.unwrap(), Some(plain.len() as u64), "{what}");
                    assert!(out == expected, "{what}: the bytes");
                }
                Some(bad) => {
                    let failed = result.unwrap_err();
                    assert!(failed.index <= bad, "{what}: chunk {}", failed.index);
                    assert_eq!(failed.kind(), ErrorKind::Io, "{what}");
                    let below = failed.index as usize * chunk;
                    assert!(out[..below] == expected[..below], "{what}: chunks below");
                }
            }
        }
    }
}
