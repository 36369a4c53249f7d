//! `distribute` end to end, as an MPI job: every job kind — the container (with a key, and to
//! recipients), age files both ways (X25519 and a passphrase), raw jobs (parallel, with CBC
//! context, and serial) and `openssl enc` password files both ways — at both schedules and
//! both transports, at 1 rank (an MPI singleton, started without `mpirun`) and 3 ranks (under
//! `mpirun`). Every deterministic output must be the bytes the local runner writes, and every
//! other one must open to the plaintext; a failing chunk on any rank, a wrong key, identity or
//! password must be agreed on by every rank and leave no output. Every rank makes its job on
//! the provider the options name (RustCrypto here, not the default).
//!
//! MPI starts once per process and only its starting thread may call it, which a test harness
//! of many threads cannot promise. So this is a plain program (`harness = false`): run by
//! `cargo test`, it writes the inputs and the expected outputs, then starts itself as the MPI
//! job — once alone, once under `mpirun -n 3` — and compares what the job wrote. Started with
//! `PARACRYPT_MPI_TEST_DIR` set, it is one rank of that job.
//!
//! A third job checks the progress watchdog: rank 2 stops itself (`SIGSTOP`) once it knows
//! the output, and the others must be aborted within the bound, through the hooks (which see
//! the stall and remove the temporary output) and with their error code.
//!
//! Each rank of the first two jobs then joins two task farms (`farm_tasks`) back to back, of as
//! many tasks as ranks each, the last rank a second late: every rank must run exactly one task
//! of each.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use age::secrecy::{ExposeSecret, SecretString};
use paracrypt_core::container::{Decryptor, Encryptor, Key, SALT_LEN, Secret};
use paracrypt_core::engine::Job;
use paracrypt_core::plan::ChunkSize;
use paracrypt_core::provider::Provider;
use paracrypt_core::raw::salted::{PasswordCipher, PasswordKdf};
use paracrypt_core::raw::{Direction, RawCipher, RawCipherName, RawRecipe};
use paracrypt_core::recipient::{Identities, Recipients};
use paracrypt_core::{ErrorKind, Runner, agefile};
use paracrypt_mpi::{
    Cluster, Destination, Error, Failure, Hooks, NewOutput, Options, Output, Recipe, Root,
    Schedule, Stall, Transport,
};

/// Where the inputs are and the outputs go; set for the ranks of the MPI job.
const DIR_ENV: &str = "PARACRYPT_MPI_TEST_DIR";
/// Set for the ranks of the stalled job.
const STALL_ENV: &str = "PARACRYPT_MPI_TEST_STALL";
/// The error code the stalled job's hooks abort with.
const STALL_CODE: i32 = 3;
const CHUNK: usize = 4096;
/// 41 whole chunks and a short last one.
const LEN: usize = 41 * CHUNK + 77;
const TAMPERED: [u64; 2] = [29, 17];
/// The age payload chunk damaged in `age-tampered` (64 KiB chunks: the input has three).
const AGE_TAMPERED: u64 = 1;
const SALT: [u8; SALT_LEN] = [0x5a; SALT_LEN];
/// The provider every run names in its options.
const PROVIDER: Provider = Provider::RustCrypto;
const LAYOUTS: [(Schedule, Transport); 4] = [
    (Schedule::Static, Transport::SharedFs),
    (Schedule::Static, Transport::Messages),
    (Schedule::Dynamic, Transport::SharedFs),
    (Schedule::Dynamic, Transport::Messages),
];

fn main() {
    match (std::env::var_os(DIR_ENV), std::env::var_os(STALL_ENV)) {
        (Some(dir), None) => rank(Path::new(&dir)),
        (Some(dir), Some(_)) => stalled_rank(Path::new(&dir)),
        (None, _) => test(),
    }
}

fn chunk_size() -> ChunkSize {
    ChunkSize::new(CHUNK).unwrap()
}

fn key() -> Key {
    Key::from_bytes(*b"paracrypt-mpi test key, 32 bytes")
}

fn raw(name: RawCipherName) -> RawCipher {
    let key: Vec<u8> = (0..32u8).collect();
    RawCipher::new(name, &key, Some(&[0xa5; 16])).unwrap()
}

fn data(len: usize) -> Vec<u8> {
    let mut x = 0x9e37_79b9u32;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}

/// The file that holds the age identity of these tests (the same on every rank).
const IDENTITY: &str = "identity.key";
const PASSPHRASE: &str = "correct horse battery staple";
const PASSWORD: &[u8] = b"hunter2";
/// A cheap scrypt work factor, so that the test stays fast.
const LOG_N: u8 = 10;

fn identity_text(d: &Path) -> String {
    std::fs::read_to_string(d.join(IDENTITY)).unwrap()
}

fn identities(d: &Path) -> Identities {
    let mut identities = Identities::new();
    identities
        .add_file(IDENTITY, identity_text(d).as_bytes())
        .unwrap();
    identities
}

fn recipients(d: &Path) -> Recipients {
    let identity: age::x25519::Identity = identity_text(d).trim().parse().unwrap();
    let mut recipients = Recipients::new();
    recipients
        .add(&identity.to_public().to_string(), "recipient 1")
        .unwrap();
    recipients
}

fn passphrase() -> SecretString {
    SecretString::from(PASSPHRASE.to_owned())
}

fn password_cipher() -> PasswordCipher {
    PasswordCipher::new(RawCipherName::Aes256Cbc, PASSWORD, PasswordKdf::default())
        .fixed_salt_for_tests([0x33; 8])
}

/// Opens the output of scenario `name`, whose bytes are not deterministic (a fresh file key).
fn open(d: &Path, name: &str, sealed: &[u8]) -> Vec<u8> {
    let opener: Box<dyn Recipe> = match name {
        "container-to-recipients" => {
            Box::new(Decryptor::new(Secret::Identities(Arc::new(identities(d)))))
        }
        "age-encrypt" => Box::new(agefile::Decryptor::new(identities(d))),
        "age-passphrase-encrypt" => Box::new(agefile::Decryptor::new(Identities::passphrase(
            passphrase(),
            None,
        ))),
        other => panic!("no opener for {other}"),
    };
    Runner::new().vec(opener.as_ref(), sealed).unwrap()
}

/// A recipe that makes its job only on [`PROVIDER`]: every rank was handed the options'
/// provider.
struct Needs<'a>(&'a dyn Recipe);

impl Needs<'_> {
    fn check(provider: Provider) -> paracrypt_core::Result<()> {
        match provider {
            PROVIDER => Ok(()),
            other => Err(paracrypt_core::Error::UnknownProvider {
                name: other.to_string(),
                valid: PROVIDER.to_string(),
                note: ": not the provider the options name".into(),
            }),
        }
    }
}

impl Recipe for Needs<'_> {
    fn first_job(
        &self,
        input: &mut dyn std::io::BufRead,
        input_len: Option<u64>,
        provider: Provider,
    ) -> paracrypt_core::Result<Job> {
        Self::check(provider)?;
        self.0.first_job(input, input_len, provider)
    }

    fn job_from_header(
        &self,
        header: &[u8],
        key: Option<&[u8]>,
        input_len: Option<u64>,
        provider: Provider,
    ) -> paracrypt_core::Result<Job> {
        Self::check(provider)?;
        self.0.job_from_header(header, key, input_len, provider)
    }
}

/// What a scenario must end with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// The output holds the expected file's bytes.
    Output,
    /// The output opens ([`open`]) to the expected file's bytes.
    Opens,
    /// Every rank returns this failure, and no output is left.
    Fails { chunk: Option<u64>, kind: ErrorKind },
}

/// One job, run at every layout.
struct Scenario {
    name: &'static str,
    /// The input file's name in the test directory.
    input: &'static str,
    recipe: Box<dyn Recipe>,
    /// The expected output file's name (for [`Expect::Output`]).
    expected: &'static str,
    expect: Expect,
}

/// The same list on every rank and in the test.
fn scenarios(d: &Path) -> Vec<Scenario> {
    let encryptor = Encryptor::new(key())
        .chunk_size(chunk_size())
        .fixed_salt_for_tests(SALT);
    let raw = |name, direction| -> Box<dyn Recipe> {
        Box::new(RawRecipe {
            cipher: raw(name),
            direction,
            chunk_size: chunk_size(),
        })
    };
    let password = |direction| Box::new(password_cipher().recipe(direction, chunk_size()));
    let age_passphrase = || agefile::Decryptor::new(Identities::passphrase(passphrase(), None));
    vec![
        Scenario {
            // Only rank 0 draws the file key: it is sent to the other ranks.
            name: "container-to-recipients",
            input: "plain",
            recipe: Box::new(
                Encryptor::new(Secret::Recipients(Arc::new(recipients(d))))
                    .chunk_size(chunk_size()),
            ),
            expected: "plain",
            expect: Expect::Opens,
        },
        Scenario {
            name: "container-from-recipients",
            input: "sealed-to-recipients",
            recipe: Box::new(Decryptor::new(Secret::Identities(Arc::new(identities(d))))),
            expected: "plain",
            expect: Expect::Output,
        },
        Scenario {
            name: "age-encrypt",
            input: "plain",
            recipe: Box::new(agefile::Encryptor::new(recipients(d))),
            expected: "plain",
            expect: Expect::Opens,
        },
        Scenario {
            name: "age-passphrase-encrypt",
            input: "plain",
            recipe: Box::new(agefile::Encryptor::new(Recipients::passphrase(
                passphrase(),
                Some(LOG_N),
            ))),
            expected: "plain",
            expect: Expect::Opens,
        },
        Scenario {
            // Every rank unwraps the file key with the identity itself.
            name: "age-decrypt",
            input: "age",
            recipe: Box::new(agefile::Decryptor::new(identities(d))),
            expected: "plain",
            expect: Expect::Output,
        },
        Scenario {
            // scrypt runs on rank 0 only: the file key is sent to the other ranks.
            name: "age-passphrase-decrypt",
            input: "age-passphrase",
            recipe: Box::new(age_passphrase()),
            expected: "plain",
            expect: Expect::Output,
        },
        Scenario {
            name: "age-tampered",
            input: "age-tampered",
            recipe: Box::new(agefile::Decryptor::new(identities(d))),
            expected: "",
            expect: Expect::Fails {
                chunk: Some(AGE_TAMPERED),
                kind: ErrorKind::Data,
            },
        },
        Scenario {
            name: "age-wrong-identity",
            input: "age",
            recipe: Box::new(agefile::Decryptor::new({
                let mut other = Identities::new();
                let key = age::x25519::Identity::generate().to_string();
                other
                    .add_file("other.key", key.expose_secret().as_bytes())
                    .unwrap();
                other
            })),
            expected: "",
            expect: Expect::Fails {
                chunk: None,
                kind: ErrorKind::Data,
            },
        },
        Scenario {
            name: "password-encrypt",
            input: "plain",
            recipe: password(Direction::Encrypt),
            expected: "salted",
            expect: Expect::Output,
        },
        Scenario {
            name: "password-decrypt",
            input: "salted",
            recipe: password(Direction::Decrypt),
            expected: "plain",
            expect: Expect::Output,
        },
        Scenario {
            // A wrong password shows as bad padding in the last chunk.
            name: "password-wrong",
            input: "salted",
            recipe: Box::new(
                PasswordCipher::new(RawCipherName::Aes256Cbc, b"wrong", PasswordKdf::default())
                    .recipe(Direction::Decrypt, chunk_size()),
            ),
            expected: "",
            expect: Expect::Fails {
                chunk: Some(LEN.div_ceil(CHUNK) as u64 - 1),
                kind: ErrorKind::Data,
            },
        },
        Scenario {
            name: "container-encrypt",
            input: "plain",
            recipe: Box::new(encryptor),
            expected: "sealed",
            expect: Expect::Output,
        },
        Scenario {
            name: "container-decrypt",
            input: "sealed",
            recipe: Box::new(Decryptor::new(key())),
            expected: "plain",
            expect: Expect::Output,
        },
        Scenario {
            name: "raw-ctr-encrypt",
            input: "plain",
            recipe: raw(RawCipherName::Aes256Ctr, Direction::Encrypt),
            expected: "ctr",
            expect: Expect::Output,
        },
        Scenario {
            // Parallel, each chunk chaining from the ciphertext block before it.
            name: "raw-cbc-decrypt",
            input: "cbc",
            recipe: raw(RawCipherName::Aes256Cbc, Direction::Decrypt),
            expected: "plain",
            expect: Expect::Output,
        },
        Scenario {
            // Serial: rank 0 runs it alone.
            name: "raw-cbc-encrypt",
            input: "plain",
            recipe: raw(RawCipherName::Aes256Cbc, Direction::Encrypt),
            expected: "cbc",
            expect: Expect::Output,
        },
        Scenario {
            name: "tampered",
            input: "tampered",
            recipe: Box::new(Decryptor::new(key())),
            expected: "",
            expect: Expect::Fails {
                chunk: Some(TAMPERED[1]),
                kind: ErrorKind::Data,
            },
        },
        Scenario {
            name: "wrong-key",
            input: "sealed",
            recipe: Box::new(Decryptor::new(Key::from_bytes([7; 32]))),
            expected: "",
            expect: Expect::Fails {
                chunk: None,
                kind: ErrorKind::Data,
            },
        },
    ]
}

fn output_name(ranks: usize, scenario: &str, schedule: Schedule, transport: Transport) -> String {
    format!("out-{ranks}-{scenario}-{schedule}-{transport}")
}

/// The rank that owns `chunk` under the static schedule: blocks of `chunks / ranks`, give or
/// take one.
fn static_owner(chunk: u64, chunks: u64, ranks: usize) -> usize {
    (0..ranks)
        .find(|&r| chunk < chunks * (r as u64 + 1) / ranks as u64)
        .unwrap()
}

// ---- The test: inputs, expected outputs, the two MPI jobs, the comparison. ----

fn test() {
    let dir = tempfile::Builder::new()
        .prefix("paracrypt-mpi-test-")
        .tempdir()
        .unwrap();
    let d = dir.path();
    let identity = age::x25519::Identity::generate();
    std::fs::write(d.join(IDENTITY), identity.to_string().expose_secret()).unwrap();
    let plain = data(LEN);
    let runner = Runner::new();
    let seal = |recipe: &dyn Recipe| runner.vec(recipe, &plain).unwrap();
    let sealed = seal(
        &Encryptor::new(key())
            .chunk_size(chunk_size())
            .fixed_salt_for_tests(SALT),
    );
    let mut tampered = sealed.clone();
    for chunk in TAMPERED {
        tampered[116 + chunk as usize * (CHUNK + 16) + 9] ^= 0x40;
    }
    let ctr = seal(&raw(RawCipherName::Aes256Ctr).recipe(Direction::Encrypt, chunk_size()));
    let cbc = seal(&raw(RawCipherName::Aes256Cbc).recipe(Direction::Encrypt, chunk_size()));
    let to_recipients =
        seal(&Encryptor::new(Secret::Recipients(Arc::new(recipients(d)))).chunk_size(chunk_size()));
    let age = seal(&agefile::Encryptor::new(recipients(d)));
    let age_passphrase = seal(&agefile::Encryptor::new(Recipients::passphrase(
        passphrase(),
        Some(LOG_N),
    )));
    let mut age_tampered = age.clone();
    let payload = age.len() - (plain.len() + 3 * 16);
    age_tampered[payload + AGE_TAMPERED as usize * (64 * 1024 + 16) + 5] ^= 0x40;
    let salted = runner
        .vec(
            &password_cipher().recipe(Direction::Encrypt, chunk_size()),
            &plain,
        )
        .unwrap();
    for (name, bytes) in [
        ("plain", &plain),
        ("sealed", &sealed),
        ("tampered", &tampered),
        ("ctr", &ctr),
        ("cbc", &cbc),
        ("sealed-to-recipients", &to_recipients),
        ("age", &age),
        ("age-passphrase", &age_passphrase),
        ("age-tampered", &age_tampered),
        ("salted", &salted),
    ] {
        std::fs::write(d.join(name), bytes).unwrap();
    }

    // One rank, started without mpirun: an MPI singleton.
    let mut alone = Command::new(std::env::current_exe().unwrap());
    alone.env(DIR_ENV, d);
    launch(alone, "1 rank (singleton)");
    check(d, 1);

    if have_mpirun() {
        let mut cmd = Command::new("timeout");
        cmd.args(["600", "mpirun", "--oversubscribe"]);
        if std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0) {
            cmd.arg("--allow-run-as-root");
        }
        cmd.args(["-n", "3", "-x", DIR_ENV]);
        cmd.arg(std::env::current_exe().unwrap());
        cmd.env(DIR_ENV, d);
        launch(cmd, "3 ranks (mpirun)");
        check(d, 3);
        stall(d);
    }
    println!("paracrypt-mpi distribute: every scenario at every layout, 1 and 3 ranks: ok");
}

/// The stalled job: 3 ranks, rank 2 stops itself; the watchdog (2 s) must abort the job with
/// the hooks' code, the hooks must have seen the stall, and nothing may be left.
fn stall(d: &Path) {
    let mut cmd = Command::new("timeout");
    cmd.args(["-k", "10", "120", "mpirun", "--oversubscribe"]);
    if std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0) {
        cmd.arg("--allow-run-as-root");
    }
    cmd.args(["-n", "3", "-x", DIR_ENV, "-x", STALL_ENV]);
    cmd.arg(std::env::current_exe().unwrap());
    cmd.env(DIR_ENV, d).env(STALL_ENV, "1");
    let start = Instant::now();
    let out = session(cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(STALL_CODE),
        "the stalled job: {:?}\n{stderr}",
        out.status
    );
    // Generous: the watchdog fires after 2 s.
    assert!(start.elapsed() < Duration::from_secs(60), "{stderr}");
    let seen = std::fs::read_to_string(d.join("stall-0")).expect("rank 0's hooks saw the stall");
    assert!(
        seen.starts_with("rank 0 on ") && seen.contains("rank 2"),
        "rank 0's stall: {seen}"
    );
    assert!(!d.join("out-stalled").exists(), "output left behind");
    println!("the stalled job ended in {:.1?}: {seen}", start.elapsed());
    check(d, 3);
}

/// What the stalled job's ranks do: rank 2 stops itself once it knows the output; a stall is
/// written down, and rank 0's temporary output removed.
struct StallHooks {
    dir: PathBuf,
    rank: usize,
}

impl Hooks for StallHooks {
    fn writing_shared(&self, path: Option<&Path>) {
        if self.rank == 2 && path.is_some() {
            let me = std::process::id().to_string();
            Command::new("kill").args(["-STOP", &me]).status().unwrap();
        }
    }

    fn stalled(&self, stall: &Stall) -> i32 {
        if self.rank == 0 {
            for entry in std::fs::read_dir(&self.dir).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|e| e == "tmp") {
                    std::fs::remove_file(path).unwrap();
                }
            }
        }
        std::fs::write(
            self.dir.join(format!("stall-{}", self.rank)),
            stall.to_string(),
        )
        .unwrap();
        STALL_CODE
    }
}

fn stalled_rank(d: &Path) {
    let cluster = Cluster::init().expect("MPI starts");
    let rank = cluster.rank();
    let cluster = cluster.with_hooks(StallHooks {
        dir: d.to_path_buf(),
        rank,
    });
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let out = d.join("out-stalled");
    let input = d.join("plain");
    let root = cluster.is_root().then(|| Root {
        input: input.as_path().into(),
        output: Destination::File(new_output(&out)),
    });
    let options = Options {
        stall_timeout: Some(Duration::from_secs(2)),
        ..Options::default()
    };
    let recipe = RawRecipe {
        cipher: raw(RawCipherName::Aes256Ctr),
        direction: Direction::Encrypt,
        chunk_size: chunk_size(),
    };
    let result = paracrypt_mpi::distribute(&cluster, &pool, options, &recipe, root);
    // Never here: the watchdog aborts the job.
    eprintln!("rank {rank}: the stalled job returned {result:?}");
    std::process::exit(1);
}

/// Runs an MPI job in a session directory of its own: Open MPI makes it under TMPDIR by
/// checking, then creating, so two jobs starting at once (other tests, other users) can fail
/// with "File exists".
fn session(mut cmd: Command) -> std::process::Output {
    let session = tempfile::tempdir().unwrap();
    cmd.env("TMPDIR", session.path());
    cmd.output().expect("start the MPI job")
}

fn launch(cmd: Command, what: &str) {
    let out = session(cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{what}: the MPI job failed ({:?})\nstdout: {}\nstderr: {stderr}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
    );
}

/// Every output of the job with `ranks` ranks is the expected bytes, and the failing scenarios
/// left nothing.
fn check(d: &Path, ranks: usize) {
    for scenario in scenarios(d) {
        for (schedule, transport) in LAYOUTS {
            let what = format!("{ranks} ranks, {}, {schedule}, {transport}", scenario.name);
            let out = d.join(output_name(ranks, scenario.name, schedule, transport));
            match scenario.expect {
                Expect::Output => {
                    let expected = std::fs::read(d.join(scenario.expected)).unwrap();
                    let got = std::fs::read(&out).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(got == expected, "{what}: not the local runner's bytes");
                }
                Expect::Opens => {
                    let expected = std::fs::read(d.join(scenario.expected)).unwrap();
                    let got = std::fs::read(&out).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(
                        open(d, scenario.name, &got) == expected,
                        "{what}: does not open"
                    );
                }
                Expect::Fails { .. } => assert!(!out.exists(), "{what}: output left behind"),
            }
        }
    }
    let leftovers: Vec<PathBuf> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

/// Whether `mpirun` can be used here (CI installs Open MPI, so there it must be).
fn have_mpirun() -> bool {
    let found = Command::new("mpirun")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "mpirun is required in CI (scripts/test.sh installs Open MPI)"
        );
        eprintln!("mpirun not found: skipping the 3-rank job");
    }
    found
}

// ---- One rank of the MPI job. ----

/// The output as the CLI makes it: a temporary file beside the destination, renamed onto it
/// by `commit`, removed when dropped uncommitted.
struct TempOutput {
    temp: tempfile::NamedTempFile,
    destination: PathBuf,
}

impl Output for TempOutput {
    fn file(&self) -> &std::fs::File {
        self.temp.as_file()
    }

    fn path(&self) -> Option<&Path> {
        Some(self.temp.path())
    }

    fn commit(self: Box<Self>) -> Result<(), Failure> {
        self.temp
            .persist_noclobber(&self.destination)
            .map(drop)
            .map_err(|e| Failure::new(ErrorKind::Io, e.to_string()))
    }
}

/// The output before it exists: a free temporary name beside the destination.
struct NewTemp {
    path: PathBuf,
    destination: PathBuf,
}

impl<'a> NewOutput<'a> for NewTemp {
    fn path(&self) -> Option<&Path> {
        Some(&self.path)
    }

    fn create(self: Box<Self>) -> Result<Box<dyn Output + 'a>, Failure> {
        let failed = |e: std::io::Error| Failure::new(ErrorKind::Io, e.to_string());
        let file = std::fs::File::create_new(&self.path).map_err(failed)?;
        let path = tempfile::TempPath::try_from_path(&self.path).map_err(failed)?;
        let temp = tempfile::NamedTempFile::from_parts(file, path);
        Ok(Box::new(TempOutput {
            temp,
            destination: self.destination,
        }))
    }
}

fn new_output<'a>(destination: &Path) -> Box<dyn NewOutput<'a> + 'a> {
    // A name nothing holds: tempfile picks it, and leaves it free.
    let (_, path) = tempfile::Builder::new()
        .suffix(".tmp")
        .make_in(destination.parent().unwrap(), |path| match path.exists() {
            true => Err(std::io::ErrorKind::AlreadyExists.into()),
            false => Ok(()),
        })
        .unwrap()
        .keep()
        .unwrap();
    Box::new(NewTemp {
        path,
        destination: destination.to_path_buf(),
    })
}

/// Two task farms back to back, of as many tasks as ranks each, the last rank joining the
/// first a second late and running its task slowly: every rank runs exactly one task of each (the first round is dealt to
/// every rank before a second task goes to any), although rank 0 alone could have run the
/// first farm's before the late rank asked, and a rank done with the first farm early asks for
/// the second's tasks while rank 0 still waits for the first's last report. Returns what was
/// wrong, on rank 0.
fn first_round(cluster: &Cluster, pool: &rayon::ThreadPool) -> Vec<String> {
    let ranks = cluster.size();
    if cluster.rank() == ranks - 1 && ranks > 1 {
        std::thread::sleep(Duration::from_secs(1));
    }
    let mut wrong = Vec::new();
    for farm in ["first", "second"] {
        let ran: Vec<std::sync::Mutex<Vec<usize>>> =
            (0..ranks).map(|_| Default::default()).collect();
        let task = |i: usize| Some(zeroize::Zeroizing::new(vec![i as u8]));
        let done = |i: usize, rank: usize, result: Vec<u8>| {
            assert_eq!(result, [i as u8, 0xa5]);
            ran[rank].lock().unwrap().push(i);
        };
        let tasks = cluster.is_root().then_some(paracrypt_mpi::Tasks {
            count: ranks,
            task: &task,
            done: &done,
        });
        // The late rank's task of the first farm is slow too: the other workers are done
        // with that farm first, and ask for the second's tasks while rank 0 waits for it.
        let slow = farm == "first" && cluster.rank() == ranks - 1 && ranks > 1;
        let run = |bytes: &[u8], _: &paracrypt_mpi::Ticker| {
            if slow {
                std::thread::sleep(Duration::from_millis(500));
            }
            vec![bytes[0], 0xa5]
        };
        paracrypt_mpi::farm_tasks(cluster, pool, Options::default(), tasks, &run);
        let ran: Vec<Vec<usize>> = ran.into_iter().map(|r| r.into_inner().unwrap()).collect();
        if cluster.is_root() && !ran.iter().all(|tasks| tasks.len() == 1) {
            wrong.push(format!(
                "{farm} farm, {ranks} tasks on {ranks} ranks, tasks run by each rank: {ran:?}"
            ));
        }
    }
    wrong
}

fn rank(d: &Path) {
    let cluster = Cluster::init().expect("MPI starts");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let ranks = cluster.size();
    let mut wrong = Vec::new();
    for scenario in scenarios(d) {
        // age files have 64 KiB chunks of their own.
        let chunk = if scenario.name.starts_with("age") {
            64 * 1024
        } else {
            CHUNK
        };
        let chunks = LEN.div_ceil(chunk) as u64;
        for (schedule, transport) in LAYOUTS {
            let what = format!(
                "rank {} of {ranks}, {}, {schedule}, {transport}",
                cluster.rank(),
                scenario.name
            );
            let out = d.join(output_name(ranks, scenario.name, schedule, transport));
            let input = d.join(scenario.input);
            let root = cluster.is_root().then(|| Root {
                input: input.as_path().into(),
                output: Destination::File(new_output(&out)),
            });
            let options = Options {
                schedule,
                transport,
                sync: true,
                provider: PROVIDER,
                ..Options::default()
            };
            let recipe = Needs(scenario.recipe.as_ref());
            let result = paracrypt_mpi::distribute(&cluster, &pool, options, &recipe, root);
            match (result, scenario.expect) {
                (Ok(summary), Expect::Output | Expect::Opens) => {
                    // CBC encryption is serial.
                    let serial = ["raw-cbc-encrypt", "password-encrypt"].contains(&scenario.name);
                    if summary.chunks != chunks || summary.parallel == serial {
                        wrong.push(format!("{what}: {summary:?}"));
                    }
                }
                (Err(Error::Rank(failure)), Expect::Fails { chunk, kind })
                    if failure.chunk == chunk && failure.kind == kind =>
                {
                    let owner = match (chunk, schedule) {
                        (None, _) => Some(0),
                        (Some(c), Schedule::Static) => Some(static_owner(c, chunks, ranks)),
                        (Some(_), Schedule::Dynamic) => None,
                    };
                    if owner.is_some_and(|owner| owner != failure.rank) {
                        wrong.push(format!("{what}: failed on the wrong rank: {failure:?}"));
                    }
                }
                (result, expect) => wrong.push(format!("{what}: {result:?}, expected {expect:?}")),
            }
        }
    }
    wrong.extend(first_round(&cluster, &pool));
    for line in &wrong {
        eprintln!("{line}");
    }
    drop(cluster);
    std::process::exit(i32::from(!wrong.is_empty()));
}
