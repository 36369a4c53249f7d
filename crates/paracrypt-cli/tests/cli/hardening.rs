//! Issue #10: what users rely on without thinking. Outputs behave like `cp`, `openssl enc -out`
//! and `age -o` (devices, FIFOs and sockets written through, symbolic links followed, modes from
//! the umask); inputs of unknown size are streams; interrupts leave nothing behind; odd inputs
//! get clear errors; and no single-bit flip or truncation of a container gets through.
//!
//! Device nodes are made with `mknod` in a scratch directory (never the real `/dev/null`), so
//! those tests need root (CI runs as root); FIFOs are read and written under a timeout, so a
//! hang fails the test instead of blocking CI.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// Long enough for any of these commands on a loaded machine; reached only by a hang.
const HANG: Duration = Duration::from_secs(120);

fn keygen(dir: &Path) -> PathBuf {
    let path = dir.join("key");
    let mut cmd = paracrypt();
    cmd.args(["keygen", "-o"]).arg(&path);
    ok(run(cmd));
    path
}

fn encrypt(key: &Path) -> Command {
    let mut cmd = paracrypt();
    cmd.args(["encrypt", "--key-file"]).arg(key);
    cmd
}

fn decrypt(key: &Path) -> Command {
    let mut cmd = paracrypt();
    cmd.args(["decrypt", "--key-file"]).arg(key);
    cmd
}

/// Seals `plain` into `dir/name` and returns its path.
fn sealed(dir: &Path, key: &Path, plain: &[u8], name: &str, extra: &[&str]) -> PathBuf {
    let input = write(dir, &format!("{name}.plain"), plain);
    let out = dir.join(name);
    let mut cmd = encrypt(key);
    cmd.args(extra).arg(&input).arg("-o").arg(&out);
    ok(run(cmd));
    std::fs::remove_file(input).unwrap();
    out
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Waits for `child`, killing it and failing the test if it takes longer than [`HANG`].
#[track_caller]
fn wait_or_fail(mut child: Child, what: &str) -> std::process::Output {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > HANG {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what} hung; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn spawn(mut cmd: Command) -> Child {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

fn mkfifo(path: &Path) {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .expect("mkfifo");
}

/// A character device node like `/dev/null` (major 1, minor 3), made in a scratch directory.
fn null_device(path: &Path) -> bool {
    if !is_root() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs the tests as root"
        );
        eprintln!("not root: cannot make a device node, skipping");
        return false;
    }
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o666),
        rustix::fs::makedev(1, 3),
    )
    .expect("mknod");
    true
}

/// Whether `path` is still the character device `null_device` made.
fn is_null_device(path: &Path) -> bool {
    let meta = std::fs::symlink_metadata(path).unwrap();
    meta.file_type().is_char_device() && meta.rdev() == rustix::fs::makedev(1, 3)
}

// ---------------------------------------------------------------------------------------------
// 2. Outputs behave like cp, openssl enc -out and age -o.

#[test]
fn a_character_device_output_is_written_through_never_replaced() {
    let dir = scratch();
    let d = dir.path();
    let null = d.join("null");
    if !null_device(&null) {
        return;
    }
    let key = keygen(d);
    let file = sealed(d, &key, &data(50_000, 1), "x.pcr", &[]);
    // `decrypt -o /dev/null` checks a file; with and without --force, file or stream input.
    for force in [false, true] {
        let mut cmd = decrypt(&key);
        cmd.arg(&file).arg("-o").arg(&null);
        if force {
            cmd.arg("--force");
        }
        ok(run(cmd));
        assert!(is_null_device(&null), "the device node was replaced");
    }
    let mut cmd = decrypt(&key);
    cmd.args(["-o"]).arg(&null);
    ok(run_with_stdin(cmd, &std::fs::read(&file).unwrap()));
    let mut cmd = encrypt(&key);
    cmd.arg(&file).arg("-o").arg(&null).arg("-f");
    ok(run(cmd));
    let mut cmd = paracrypt();
    cmd.args(["raw", "-e", "-c", "aes-128-ctr", "-K", &"00".repeat(16)])
        .args(["--iv", &"00".repeat(16)])
        .arg(&file)
        .arg("-o")
        .arg(&null);
    ok(run(cmd));
    assert!(is_null_device(&null));
    // A damaged file still fails, with the device intact.
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&file, &bytes).unwrap();
    let mut cmd = decrypt(&key);
    cmd.arg(&file).arg("-o").arg(&null);
    fails(run(cmd), 1, "failed authentication");
    assert!(is_null_device(&null));
    assert_eq!(listing(d), ["key", "null", "x.pcr"]);
}

#[test]
fn binary_output_to_a_terminal_device_is_refused() {
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).expect("a pseudo-terminal");
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let terminal = PathBuf::from(ptsname(&master, Vec::new()).unwrap().into_string().unwrap());
    let dir = scratch();
    let key = keygen(dir.path());
    let input = write(dir.path(), "in", b"data");
    let mut cmd = encrypt(&key);
    cmd.arg(&input).arg("-o").arg(&terminal);
    fails(
        run(cmd),
        2,
        "refusing to write binary output to the terminal",
    );
}

#[test]
fn a_fifo_output_is_written_through() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d);
    let plain = data(3 << 20, 2);
    let file = sealed(d, &key, &plain, "x.pcr", &["--chunk-size", "64KiB"]);
    let fifo = d.join("fifo");
    mkfifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let mut cmd = decrypt(&key);
    cmd.arg(&file).arg("-o").arg(&fifo).arg("-j").arg("2");
    let out = wait_or_fail(spawn(cmd), "decrypt -o FIFO");
    ok(out);
    assert!(reader.join().unwrap() == plain);
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    assert_eq!(listing(d), ["fifo", "key", "x.pcr"]);
}

#[test]
fn pipes_at_either_end_get_a_buffer_of_a_task() {
    // Linux's 64 KiB pipe buffer makes both ends sleep and wake for every 64 KiB: a pipe we
    // read or write is grown to 1 MiB (the default most an unprivileged process may ask for).
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d);
    let plain = data(300_000, 4);
    let most = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
        .map_or(1 << 20, |s| s.trim().parse::<usize>().unwrap())
        .min(1 << 20);
    let (stdin_reader, mut stdin_writer) = std::io::pipe().unwrap();
    let (mut stdout_reader, stdout_writer) = std::io::pipe().unwrap();
    let before = rustix::pipe::fcntl_getpipe_size(&stdin_writer).unwrap();
    assert!(before < most, "a fresh pipe has {before} bytes");
    let mut cmd = encrypt(&key);
    cmd.stdin(stdin_reader)
        .stdout(stdout_writer)
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    drop(cmd);
    // Once the 300 kB are in, the run has read from the pipe, which it grows before reading;
    // the writing end is then closed, so that the run sees the end of its input.
    let feeder = std::thread::spawn(move || {
        stdin_writer.write_all(&plain).unwrap();
        rustix::pipe::fcntl_getpipe_size(&stdin_writer).unwrap()
    });
    let mut sealed = Vec::new();
    stdout_reader.read_to_end(&mut sealed).unwrap();
    ok(wait_or_fail(child, "encrypt from a pipe to a pipe"));
    assert_eq!(feeder.join().unwrap(), most, "stdin's pipe");
    assert_eq!(
        rustix::pipe::fcntl_getpipe_size(&stdout_reader).unwrap(),
        most,
        "stdout's pipe"
    );
    assert!(sealed.len() > 300_000);
}

#[test]
fn a_socket_output_is_connected_to_and_written_through() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d);
    let plain = data(100_000, 3);
    let file = sealed(d, &key, &plain, "x.pcr", &[]);
    // A socket's path holds at most 107 bytes, and TMPDIR may be deeper than that: the socket
    // is bound through this process's descriptor of its directory, and the run given a path
    // relative to that directory.
    let dir_fd = File::open(d).unwrap();
    let short = format!("/proc/self/fd/{}/sock", dir_fd.as_raw_fd());
    let listener = std::os::unix::net::UnixListener::bind(short).unwrap();
    drop(dir_fd);
    let reader = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut got = Vec::new();
        stream.read_to_end(&mut got).unwrap();
        got
    });
    let mut cmd = decrypt(&key);
    cmd.arg(&file).args(["-o", "sock"]).current_dir(d);
    ok(wait_or_fail(spawn(cmd), "decrypt -o SOCKET"));
    assert!(reader.join().unwrap() == plain);
}

#[test]
fn a_symlink_output_writes_its_target_and_stays_a_link() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d);
    let input = write(d, "in", &data(10_000, 4));
    std::fs::create_dir(d.join("sub")).unwrap();
    // A link to a missing file creates the file (as the shell's `>` does).
    std::os::unix::fs::symlink("sub/target", d.join("link")).unwrap();
    let mut cmd = encrypt(&key);
    cmd.arg(&input).arg("-o").arg(d.join("link"));
    ok(run(cmd));
    let first = std::fs::read(d.join("sub/target")).unwrap();
    // The target exists now: refused without --force, replaced with it; the link stays.
    let mut cmd = encrypt(&key);
    cmd.arg(&input).arg("-o").arg(d.join("link"));
    fails(run(cmd), 2, "already exists");
    let mut cmd = encrypt(&key);
    cmd.arg(&input).arg("-o").arg(d.join("link")).arg("-f");
    ok(run(cmd));
    assert!(
        std::fs::symlink_metadata(d.join("link"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let second = std::fs::read(d.join("sub/target")).unwrap();
    assert_ne!(first, second, "a fresh salt: the target was rewritten");
    let mut cmd = decrypt(&key);
    cmd.arg(d.join("link"));
    assert_eq!(ok(run(cmd)), std::fs::read(&input).unwrap());
    assert_eq!(listing(d), ["in", "key", "link", "sub"]);
    assert_eq!(listing(&d.join("sub")), ["target"]);
}

/// Runs `args` under `umask` (through `sh`, which every system has) and returns the status.
fn with_umask(umask: &str, args: &[&std::ffi::OsStr]) -> std::process::Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_paracrypt"))
        .args(args)
        .env_remove("PARACRYPT_PASSWORD");
    run(cmd)
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn new_outputs_follow_the_umask_and_private_keys_stay_private() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d);
    let input = write(d, "in", b"some data");
    for (umask, expected) in [
        ("022", 0o644),
        ("027", 0o640),
        ("077", 0o600),
        ("002", 0o664),
    ] {
        for temp in ["o_tmpfile", "named"] {
            let out = d.join(format!("out-{umask}-{temp}"));
            let args = [
                "encrypt".as_ref(),
                "-k".as_ref(),
                key.as_os_str(),
                input.as_os_str(),
                "-o".as_ref(),
                out.as_os_str(),
            ];
            let mut cmd = Command::new("sh");
            cmd.arg("-c")
                .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
                .arg(env!("CARGO_BIN_EXE_paracrypt"))
                .args(args);
            if temp == "named" {
                cmd.env("PARACRYPT_NO_TMPFILE", "1");
            }
            ok(run(cmd));
            assert_eq!(mode(&out), expected, "umask {umask}, {temp}");
        }
    }
    // Key pairs: the private key 0600 whatever the umask, the public key as any output.
    let private = d.join("ec.pem");
    let public = d.join("ec.pub.pem");
    let out = with_umask(
        "022",
        &[
            "ecdsa".as_ref(),
            "keygen".as_ref(),
            "-o".as_ref(),
            private.as_os_str(),
            "--public-out".as_ref(),
            public.as_os_str(),
        ],
    );
    ok(out);
    assert_eq!(mode(&private), 0o600);
    assert_eq!(mode(&public), 0o644);
}

#[test]
fn force_keeps_the_mode_and_owner_of_the_file_it_replaces() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d);
    let input = write(d, "in", b"new data");
    for temp in ["o_tmpfile", "named"] {
        let out = write(d, "out", b"old data");
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o604)).unwrap();
        let owner = is_root().then(|| {
            std::os::unix::fs::chown(&out, Some(1234), Some(5678)).unwrap();
            (1234, 5678)
        });
        let mut cmd = encrypt(&key);
        cmd.arg(&input).arg("-o").arg(&out).arg("--force");
        if temp == "named" {
            cmd.env("PARACRYPT_NO_TMPFILE", "1");
        }
        ok(run(cmd));
        let meta = std::fs::metadata(&out).unwrap();
        assert_eq!(meta.permissions().mode() & 0o7777, 0o604, "{temp}");
        if let Some((uid, gid)) = owner {
            assert_eq!((meta.uid(), meta.gid()), (uid, gid), "{temp}");
        }
        let mut cmd = decrypt(&key);
        cmd.arg(&out);
        assert_eq!(ok(run(cmd)), b"new data");
        std::fs::remove_file(&out).unwrap();
    }
    assert_eq!(listing(d), ["in", "key"]);
}

#[test]
fn stdout_that_is_the_input_file_is_refused() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d);
    let original = data(10_000, 5);
    let input = write(d, "f", &original);
    // `paracrypt encrypt f >> f`, and `paracrypt encrypt < f >> f`.
    for from_stdin in [false, true] {
        let append = std::fs::OpenOptions::new()
            .append(true)
            .open(&input)
            .unwrap();
        let mut cmd = encrypt(&key);
        cmd.stdout(append).stderr(Stdio::piped());
        if from_stdin {
            cmd.stdin(File::open(&input).unwrap());
        } else {
            cmd.arg(&input).stdin(Stdio::null());
        }
        let out = cmd.output().unwrap();
        fails(out, 2, "standard output is the input file");
        assert!(std::fs::read(&input).unwrap() == original);
    }
    // `-o /dev/stdout` is standard output: written, not refused as an existing file.
    let mut cmd = encrypt(&key);
    cmd.arg(&input).args(["-o", "/dev/stdout"]);
    let sealed = ok(run(cmd));
    assert!(ok(run_with_stdin(decrypt(&key), &sealed)) == original);
}

// ---------------------------------------------------------------------------------------------
// 3. Inputs whose size is unknown, and FIFOs.

#[test]
fn proc_files_are_read_as_streams_and_read_errors_fail() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d);
    // /proc/version reports size 0 but holds a line of text.
    let expected = std::fs::read("/proc/version").unwrap();
    assert!(!expected.is_empty());
    assert_eq!(std::fs::metadata("/proc/version").unwrap().len(), 0);
    let out = d.join("version.pcr");
    let mut cmd = encrypt(&key);
    cmd.arg("/proc/version").arg("-o").arg(&out);
    ok(run(cmd));
    let mut cmd = decrypt(&key);
    cmd.arg(&out);
    assert_eq!(ok(run(cmd)), expected);
    let mut cmd = paracrypt();
    cmd.args(["raw", "-e", "-c", "aes-128-ctr", "-K", &"11".repeat(16)])
        .args(["--iv", &"22".repeat(16), "/proc/version"]);
    assert_eq!(ok(run(cmd)).len(), expected.len());
    // Reading /proc/self/mem at offset 0 fails with EIO: an error, never a short success.
    let mem = d.join("mem.pcr");
    let mut cmd = encrypt(&key);
    cmd.arg("/proc/self/mem").arg("-o").arg(&mem);
    fails(run(cmd), 1, "Input/output error");
    assert_eq!(listing(d), ["key", "version.pcr"]);
}

#[test]
fn a_fifo_input_is_opened_once_and_never_hangs() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d);
    let plain = data(2 << 20, 6);
    let fifo = d.join("fifo");
    mkfifo(&fifo);
    let feed = |fifo: PathBuf, plain: Vec<u8>| {
        std::thread::spawn(move || {
            let mut writer = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
            let _ = writer.write_all(&plain);
        })
    };
    // encrypt FIFO -o FILE.
    let writer = feed(fifo.clone(), plain.clone());
    let out = d.join("x.pcr");
    let mut cmd = encrypt(&key);
    cmd.arg(&fifo).arg("-o").arg(&out);
    ok(wait_or_fail(spawn(cmd), "encrypt FIFO"));
    writer.join().unwrap();
    let mut cmd = decrypt(&key);
    cmd.arg(&out);
    assert!(ok(run(cmd)) == plain);
    // Signing checks its output against the input without opening the FIFO a second time.
    let ec = d.join("ec.pem");
    let mut cmd = paracrypt();
    cmd.args(["ecdsa", "keygen", "-o"]).arg(&ec);
    ok(run(cmd));
    let writer = feed(fifo.clone(), plain.clone());
    let sig = d.join("fifo.sig");
    let mut cmd = paracrypt();
    cmd.args(["ecdsa", "sign", "--key"])
        .arg(&ec)
        .arg("--signature")
        .arg(&sig)
        .arg(&fifo);
    ok(wait_or_fail(spawn(cmd), "ecdsa sign FIFO"));
    writer.join().unwrap();
    let copy = write(d, "copy", &plain);
    let mut cmd = paracrypt();
    cmd.args(["ecdsa", "verify", "--public"])
        .arg(&ec)
        .arg("--signature")
        .arg(&sig)
        .arg(&copy);
    ok(run(cmd));
}

// ---------------------------------------------------------------------------------------------
// 4. Interrupts and resources.

/// A run in the middle of its input, and what keeps it there.
struct Interrupted {
    child: Child,
    /// Dropping it lets the feeder close the FIFO (the input ends).
    hold: Option<std::sync::mpsc::Sender<()>>,
    feeder: std::thread::JoinHandle<()>,
    stderr: std::thread::JoinHandle<Vec<u8>>,
}

impl Interrupted {
    /// Ends the input: a run that was not interrupted then finishes.
    fn release(&mut self) {
        self.hold = None;
    }

    /// Waits for the run (then ends its input); its status and stderr.
    fn end(mut self) -> (std::process::ExitStatus, String) {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > HANG {
                let _ = self.child.kill();
                panic!("an interrupted run did not end");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        drop(self.hold);
        self.feeder.join().unwrap();
        let stderr = self.stderr.join().unwrap();
        (status, String::from_utf8_lossy(&stderr).into_owned())
    }
}

/// Starts `encrypt --force FIFO -o out` with `--progress`, feeds it 4 MiB and keeps the FIFO
/// open, and returns once progress is shown: the run is then in the middle of its input.
///
/// The run starts through coreutils' `env`, which sets the signals' dispositions first: SIGHUP,
/// SIGINT and SIGTERM back to their defaults (the test itself may run under `nohup`, or as a
/// background job that ignores SIGINT: a child inherits that), and `ignore` ignored.
fn interrupted_run(d: &Path, key: &Path, named: bool, ignore: Option<&str>) -> Interrupted {
    let fifo = d.join("fifo");
    if !fifo.exists() {
        mkfifo(&fifo);
    }
    let mut cmd = Command::new("env");
    cmd.arg("--default-signal=HUP,INT,TERM");
    if let Some(signal) = ignore {
        cmd.arg(format!("--ignore-signal={signal}"));
    }
    cmd.arg(env!("CARGO_BIN_EXE_paracrypt"))
        .args(["encrypt", "--key-file"])
        .arg(key)
        .env_remove("PARACRYPT_PASSWORD");
    cmd.arg(&fifo).arg("-o").arg(d.join("out")).args([
        "--force",
        "--progress",
        "--chunk-size",
        "64KiB",
    ]);
    if named {
        cmd.env("PARACRYPT_NO_TMPFILE", "1");
    }
    let mut child = spawn(cmd);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let stderr = {
        let mut pipe = child.stderr.take().unwrap();
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                seen.lock().unwrap().extend_from_slice(&buf[..n]);
            }
            seen.lock().unwrap().clone()
        })
    };
    let (hold, held) = std::sync::mpsc::channel::<()>();
    let feeder = std::thread::spawn(move || {
        let mut writer = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
        // Fails with EPIPE if the run is killed before it read everything.
        let _ = writer.write_all(&data(4 << 20, 7));
        let _ = held.recv();
    });
    let start = Instant::now();
    // The first progress line comes once bytes have been read (a stream's size is unknown).
    while !String::from_utf8_lossy(&seen.lock().unwrap()).contains("encrypting") {
        assert!(start.elapsed() < HANG, "the run never showed progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    if named {
        assert!(listing(d).iter().any(|n| n.starts_with(".paracrypt-")));
    }
    Interrupted {
        child,
        hold: Some(hold),
        feeder,
        stderr,
    }
}

#[test]
fn interrupts_leave_no_temporary_file_and_the_old_output_intact() {
    use rustix::process::{Pid, Signal, kill_process};
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d);
    for named in [true, false] {
        for signal in [Signal::TERM, Signal::INT, Signal::HUP] {
            std::fs::write(d.join("out"), b"the old output").unwrap();
            let run = interrupted_run(d, &key, named, None);
            kill_process(Pid::from_child(&run.child), signal).unwrap();
            let (status, stderr) = run.end();
            assert_eq!(
                status.signal(),
                Some(signal.as_raw()),
                "killed by the signal it got ({signal:?}, named temp: {named}): {status:?} {stderr}"
            );
            assert_eq!(
                listing(d),
                ["fifo", "key", "out"],
                "{signal:?} named={named}"
            );
            assert_eq!(std::fs::read(d.join("out")).unwrap(), b"the old output");
            // Progress was shown (plain lines: stderr is a pipe), and an interrupted run
            // does not say it is done.
            assert!(stderr.contains("encrypting: "), "no progress: {stderr:?}");
            assert!(!stderr.contains('\x1b'), "escape codes: {stderr:?}");
            assert!(!stderr.contains("done:"), "said done: {stderr:?}");
        }
    }
    // Even SIGKILL, which no process can catch, leaves no temporary file: it has no name.
    std::fs::write(d.join("out"), b"the old output").unwrap();
    let run = interrupted_run(d, &key, false, None);
    kill_process(Pid::from_child(&run.child), Signal::KILL).unwrap();
    run.end();
    assert_eq!(listing(d), ["fifo", "key", "out"]);
    assert_eq!(std::fs::read(d.join("out")).unwrap(), b"the old output");
}

#[test]
fn a_signal_ignored_at_start_stays_ignored() {
    use rustix::process::{Pid, Signal, kill_process};
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d);
    // As under `nohup`: SIGHUP does not end the run, which completes when its input ends.
    std::fs::write(d.join("out"), b"the old output").unwrap();
    let mut nohup = interrupted_run(d, &key, true, Some("HUP"));
    kill_process(Pid::from_child(&nohup.child), Signal::HUP).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(listing(d).iter().any(|n| n.starts_with(".paracrypt-")));
    nohup.release();
    let (status, stderr) = nohup.end();
    assert!(status.success(), "{status:?} {stderr}");
    assert_eq!(listing(d), ["fifo", "key", "out"]);
    let mut cmd = decrypt(&key);
    cmd.arg(d.join("out"));
    assert!(ok(run(cmd)) == data(4 << 20, 7));
}

#[test]
fn thread_counts_have_a_ceiling() {
    let dir = scratch();
    let input = write(dir.path(), "in", b"x");
    let start = Instant::now();
    let mut cmd = paracrypt();
    cmd.args(["raw", "-e", "-c", "aes-128-ctr", "-K", &"00".repeat(16)])
        .args(["--iv", &"00".repeat(16), "-j", "100000"])
        .arg(&input);
    fails(run(cmd), 2, "--threads 100000 is more than");
    let mut cmd = paracrypt();
    cmd.args(["bench", "--threads", "1,100000", "-q"]);
    fails(run(cmd), 2, "--threads 100000 is more than");
    let mut cmd = paracrypt();
    cmd.args(["rsa", "keygen", "-j", "0", "-o"])
        .arg(dir.path().join("k"));
    fails(run(cmd), 2, "--threads must be at least 1");
    assert!(start.elapsed() < Duration::from_secs(60));
    // Four per core is accepted.
    let cores = std::thread::available_parallelism().unwrap().get();
    let mut cmd = paracrypt();
    cmd.args(["raw", "-e", "-c", "aes-128-ctr", "-K", &"00".repeat(16)])
        .args(["--iv", &"00".repeat(16), "-j", &(4 * cores).to_string()])
        .arg(&input);
    ok(run(cmd));
}

#[test]
fn small_inputs_with_huge_chunks_take_little_memory() {
    // Under a 256 MiB data limit (prlimit, from util-linux), a 512 MiB chunk buffer cannot be
    // allocated: the run passes only if buffers fit the input, file or stream.
    if Command::new("prlimit").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "prlimit is in every Debian system"
        );
        eprintln!("prlimit not found: skipping");
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d);
    let input = write(d, "in", &data(1000, 8));
    let limited_cmd = |args: &[&std::ffi::OsStr]| {
        let mut cmd = Command::new("prlimit");
        cmd.arg(format!("--data={}", 256 << 20))
            .arg(env!("CARGO_BIN_EXE_paracrypt"))
            .args(args);
        cmd
    };
    let limited = |args: &[&std::ffi::OsStr]| run(limited_cmd(args));
    // A stream: stdin to stdout, both ways.
    let streamed = ok(run_with_stdin(
        limited_cmd(&[
            "encrypt".as_ref(),
            "-k".as_ref(),
            key.as_os_str(),
            "--chunk-size".as_ref(),
            "512MiB".as_ref(),
        ]),
        &data(100_000, 8),
    ));
    let back = ok(run_with_stdin(
        limited_cmd(&["decrypt".as_ref(), "-k".as_ref(), key.as_os_str()]),
        &streamed,
    ));
    assert!(back == data(100_000, 8));
    let sealed = d.join("in.pcr");
    ok(limited(&[
        "encrypt".as_ref(),
        "-k".as_ref(),
        key.as_os_str(),
        "--chunk-size".as_ref(),
        "512MiB".as_ref(),
        "-j".as_ref(),
        "2".as_ref(),
        input.as_os_str(),
        "-o".as_ref(),
        sealed.as_os_str(),
    ]));
    let back = d.join("back");
    ok(limited(&[
        "decrypt".as_ref(),
        "-k".as_ref(),
        key.as_os_str(),
        sealed.as_os_str(),
        "-o".as_ref(),
        back.as_os_str(),
    ]));
    assert_eq!(std::fs::read(&back).unwrap(), data(1000, 8));
    let ctr = d.join("ctr");
    ok(limited(&[
        "raw".as_ref(),
        "-e".as_ref(),
        "-c".as_ref(),
        "aes-256-ctr".as_ref(),
        "-K".as_ref(),
        "00".repeat(32).as_ref(),
        "--iv".as_ref(),
        "00".repeat(16).as_ref(),
        "--chunk-size".as_ref(),
        "512MiB".as_ref(),
        input.as_os_str(),
        "-o".as_ref(),
        ctr.as_os_str(),
    ]));
}

// ---------------------------------------------------------------------------------------------
// 5. Small things users hit.

/// Runs `cmd` with stdout a pipe whose reading end is already closed.
fn with_closed_stdout(mut cmd: Command) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    cmd.stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d);
    let file = sealed(d, &key, b"data", "x.pcr", &[]);
    let mut info = paracrypt();
    info.arg("info").arg(&file);
    let mut completions = paracrypt();
    completions.args(["generate", "completions", "bash"]);
    let mut bench = paracrypt();
    bench.args([
        "bench",
        "--algorithms",
        "raw/aes-256-ctr",
        "--sizes",
        "4KiB",
        "--modes",
        "memory",
        "--threads",
        "1",
        "--repeat",
        "1",
        "-q",
    ]);
    let mut decrypt = decrypt(&key);
    decrypt.arg(&file);
    for (name, cmd) in [
        ("info", info),
        ("completions", completions),
        ("bench", bench),
        ("decrypt", decrypt),
    ] {
        let out = with_closed_stdout(cmd);
        let (code, stderr) = status_and_stderr(&out);
        assert_eq!((code, stderr.as_str()), (0, ""), "{name}");
    }
}

#[test]
fn errors_show_no_internal_paths_rust_wording_or_doubled_prefixes() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d);
    let input = write(d, "in", b"data");
    // An output in a directory that does not exist: the error names OUTPUT, not a temp file.
    for named in [false, true] {
        let mut cmd = encrypt(&key);
        cmd.arg(&input).arg("-o").arg(d.join("missing/out"));
        if named {
            cmd.env("PARACRYPT_NO_TMPFILE", "1");
        }
        let stderr = fails(run(cmd), 1, "cannot create");
        assert!(
            stderr.contains("missing/out: No such file or directory"),
            "{stderr}"
        );
        assert!(
            !stderr.contains(".paracrypt-") && !stderr.contains("at path"),
            "{stderr}"
        );
    }
    let cases: [(&str, &[u8], &str); 8] = [
        ("binary", &[0xff, 0xfe, 0x00, 0x80], "is not text (UTF-8)"),
        (
            "identity",
            b"# created: today\nAGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ\n",
            "it is an age identity: give it with -i FILE instead",
        ),
        (
            "recipient",
            b"age1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq\n",
            "it is a recipient (a public key): encrypt to it with -r or -R",
        ),
        (
            "ssh",
            b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaA==\n-----END OPENSSH PRIVATE KEY-----\n",
            "it is an SSH private key: give it with -i FILE instead",
        ),
        ("bad-hex", b"# c\nzz00\n", ": not a key"),
        ("short", b"00112233\n", "key is 4 bytes, expected 32"),
        ("two", b"00\n11\n", "more than one key line"),
        (
            "pem",
            b"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n",
            "it is a PEM key",
        ),
    ];
    for (name, bytes, needle) in cases {
        let bad = write(d, name, bytes);
        let mut cmd = encrypt(&bad);
        cmd.arg(&input).arg("-o").arg(d.join("out"));
        let stderr = fails(run(cmd), 2, needle);
        assert_eq!(
            stderr.matches("key file").count(),
            1,
            "one prefix: {stderr}"
        );
        for wording in ["stream did not contain", "bad key file", "failed to fill"] {
            assert!(!stderr.contains(wording), "{stderr}");
        }
    }
    let binary = write(d, "pw", &[0xff, 0xfe]);
    let mut cmd = paracrypt();
    cmd.args(["encrypt", "--password-file"])
        .arg(&binary)
        .arg(&input)
        .arg("-o")
        .arg(d.join("out"));
    let stderr = fails(run(cmd), 2, "password file");
    assert!(stderr.contains("is not text (UTF-8)"), "{stderr}");
    assert!(!d.join("out").exists());
}

/// A directory given where a file goes (no `--recursive`) is a usage error that names the way,
/// with Python's words (tests/test_people_and_tools.py), and nothing is written.
#[test]
fn a_directory_without_recursive_says_how_trees_are_done() {
    let dir = scratch();
    let d = dir.path();
    let key = write(d, "k", format!("{}\n", "11".repeat(32)).as_bytes());
    std::fs::create_dir(d.join("photos")).unwrap();
    for command in ["encrypt", "decrypt"] {
        let mut cmd = paracrypt();
        cmd.args([command, "-k"])
            .arg(&key)
            .arg(d.join("photos"))
            .arg("-o")
            .arg(d.join("out"));
        fails(
            run(cmd),
            2,
            "photos is a directory: a directory is encrypted, decrypted and verified as a tree \
             (--recursive",
        );
        assert!(!d.join("out").exists(), "{command}");
    }
    // An I/O error in the system's words, without Rust's "(os error 2)".
    let mut cmd = paracrypt();
    cmd.args(["encrypt", "-k"])
        .arg(&key)
        .arg(d.join("missing"))
        .arg("-o")
        .arg(d.join("out"));
    let stderr = fails(run(cmd), 1, "missing: No such file or directory");
    assert!(!stderr.contains("os error"), "{stderr}");
    // --passphrase is age's: a container was made with it silently.
    let mut cmd = paracrypt();
    cmd.env("PARACRYPT_PASSWORD", "pw")
        .args(["encrypt", "--passphrase"])
        .arg(&key)
        .arg("-o")
        .arg(d.join("out"));
    fails(
        run(cmd),
        2,
        "--passphrase writes an age file (age's scrypt): add --format age",
    );
    assert!(!d.join("out").exists());
    // A file of recipients given to -r: -R is the way.
    let recipients = write(d, "team.txt", b"# the team\n");
    let mut cmd = paracrypt();
    cmd.arg("encrypt")
        .arg("-r")
        .arg(&recipients)
        .arg(&key)
        .arg("-o")
        .arg(d.join("out"));
    let stderr = fails(run(cmd), 2, "recipient 1 (");
    assert!(
        stderr.contains("): it is a file: give a file of recipients with -R FILE"),
        "{stderr}"
    );
    assert!(!d.join("out").exists());
}

#[test]
fn a_malformed_key_file_and_a_malformed_key_are_the_same_class() {
    let dir = scratch();
    let d = dir.path();
    let bad = write(d, "bad.key", b"not hex at all\n");
    let input = write(d, "in", b"data");
    let mut cmd = encrypt(&bad);
    cmd.arg(&input);
    let (file_code, _) = status_and_stderr(&run(cmd));
    let mut cmd = paracrypt();
    cmd.args(["raw", "-e", "-c", "aes-128-ctr", "-K", "not hex"])
        .args(["--iv", &"00".repeat(16)])
        .arg(&input);
    let (key_code, _) = status_and_stderr(&run(cmd));
    assert_eq!((file_code, key_code), (2, 2));
}

#[test]
fn bytes_appended_to_a_file_are_trailing_data() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d);
    let plain = data(5000, 9);
    for (chunk, appended) in [
        ("1MiB", b"garbage\n".to_vec()),
        ("1MiB", vec![0u8; 200]),
        ("4KiB", b"\n".to_vec()),
        ("4KiB", data(3000, 10)),
    ] {
        let file = sealed(d, &key, &plain, "x.pcr", &["--chunk-size", chunk]);
        let mut bytes = std::fs::read(&file).unwrap();
        let copy = bytes.clone();
        bytes.extend_from_slice(&appended);
        std::fs::write(&file, &bytes).unwrap();
        for threads in ["1", "3"] {
            let mut cmd = decrypt(&key);
            cmd.arg(&file)
                .arg("-o")
                .arg(d.join("out"))
                .args(["-j", threads]);
            fails(run(cmd), 1, "trailing data after the last chunk");
            let mut cmd = decrypt(&key);
            cmd.args(["-j", threads]);
            fails(run_with_stdin(cmd, &bytes), 1, "trailing data");
        }
        // A file appended to itself (`cat x.pcr >> x.pcr`).
        let mut twice = copy.clone();
        twice.extend_from_slice(&copy);
        fails(run_with_stdin(decrypt(&key), &twice), 1, "trailing data");
        std::fs::remove_file(&file).unwrap();
        assert_eq!(listing(d), ["key"]);
    }
}

#[test]
fn info_reports_a_file_that_no_writer_makes() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d);
    let file = sealed(
        d,
        &key,
        &data(10_000, 11),
        "x.pcr",
        &["--chunk-size", "4KiB"],
    );
    let bytes = std::fs::read(&file).unwrap();
    let stride = 4096 + 16;
    // The last chunk cut to 5 bytes, shorter than its 16-byte tag.
    let cut = write(d, "cut.pcr", &bytes[..116 + 2 * stride + 5]);
    let mut cmd = paracrypt();
    cmd.arg("info").arg(&cut);
    let out = run(cmd);
    assert!(String::from_utf8_lossy(&out.stdout).contains("suite:       aes-256-gcm"));
    fails(out, 1, "input truncated inside chunk 2");
    let header = write(d, "header.pcr", &bytes[..116]);
    let mut cmd = paracrypt();
    cmd.arg("info").arg(&header);
    fails(run(cmd), 1, "file truncated after the header");
    let mut cmd = paracrypt();
    cmd.arg("info").arg(&file);
    let text = String::from_utf8(ok(run(cmd))).unwrap();
    assert!(text.contains("plaintext:   10000 bytes"), "{text}");
}

#[test]
fn an_openssl_password_file_says_how_to_read_it() {
    let Some(_) = openssl() else { return };
    let dir = scratch();
    let d = dir.path();
    let plain = data(1000, 12);
    let input = write(d, "in", &plain);
    let enc = d.join("in.enc");
    openssl_ok(&[
        "enc",
        "-aes-256-cbc",
        "-pbkdf2",
        "-pass",
        "pass:secret",
        "-in",
        input.to_str().unwrap(),
        "-out",
        enc.to_str().unwrap(),
    ]);
    let raw = |extra: &[&str]| {
        let mut cmd = paracrypt();
        cmd.args(["raw", "-d", "-c", "aes-256-cbc", "-K", &"00".repeat(32)])
            .args(["--iv", &"00".repeat(16)])
            .args(extra);
        cmd
    };
    let stderr = fails(
        run(raw(&[enc.to_str().unwrap()])),
        1,
        "starts with `Salted__`",
    );
    assert!(
        stderr.contains("paracrypt raw -d -c aes-256-cbc --password-file PASSWORD_FILE --pbkdf2"),
        "{stderr}"
    );
    assert!(!stderr.contains("bad padding"), "{stderr}");
    let bytes = std::fs::read(&enc).unwrap();
    fails(
        run_with_stdin(raw(&[]), &bytes),
        1,
        "the input starts with `Salted__`",
    );
    // The advice works: the password, not a key.
    let password = write(d, "password", b"secret\n");
    // `decrypt` (which reads paracrypt's and age's formats) names what it was given, and the way.
    let mut cmd = paracrypt();
    cmd.args(["decrypt", "--password-file"])
        .arg(&password)
        .arg(&enc);
    let stderr = fails(
        run(cmd),
        1,
        "an `openssl enc` password file (it starts with Salted__)",
    );
    assert!(
        stderr.contains("paracrypt raw -d -c CIPHER --password-file FILE"),
        "{stderr}"
    );
    let mut cmd = paracrypt();
    cmd.args([
        "raw",
        "-d",
        "-c",
        "aes-256-cbc",
        "--pbkdf2",
        "--password-file",
    ])
    .arg(&password)
    .arg(&enc);
    assert!(ok(run(cmd)) == plain);
}

// ---------------------------------------------------------------------------------------------
// 6. No damaged byte and no truncation of a container gets through.

/// One bit of every byte flipped (bit `byte % 8`, so every bit position is flipped somewhere)
/// and every truncation, through the binary at 1 and 3 threads: exit 1, no panic, nothing left
/// beside the input. Every bit of the same file is flipped in memory and as a stream by the
/// core's `container::failures::every_bit_flip_and_every_truncation_is_refused` (5,616 process
/// starts here took a minute and a half of CI).
#[test]
fn every_byte_damaged_and_every_truncation_is_rejected_and_leaves_no_output() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d);
    // Three chunks of 64 bytes, the last one short: 116 + 80 + 80 + 36 bytes.
    let plain = data(148, 13);
    let file = sealed(d, &key, &plain, "x.pcr", &["--chunk-size", "64"]);
    let good = std::fs::read(&file).unwrap();
    assert_eq!(good.len(), 116 + 80 + 80 + 36);
    let mut damaged: Vec<Vec<u8>> = Vec::new();
    for byte in 0..good.len() {
        let mut bytes = good.clone();
        bytes[byte] ^= 1 << (byte % 8);
        damaged.push(bytes);
    }
    for len in 0..good.len() {
        damaged.push(good[..len].to_vec());
    }
    let cases: Vec<(usize, &str)> = (0..damaged.len())
        .flat_map(|i| [(i, "1"), (i, "3")])
        .collect();
    // Both cores run cases; each case has its own directory.
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&(case, threads)) = cases.get(i) else {
                        return;
                    };
                    let case_dir = d.join(format!("case-{i}"));
                    std::fs::create_dir(&case_dir).unwrap();
                    let input = write(&case_dir, "x.pcr", &damaged[case]);
                    let out = case_dir.join("out");
                    let mut cmd = decrypt(&key);
                    cmd.arg(&input).arg("-o").arg(&out).args(["-j", threads]);
                    let result = run(cmd);
                    let (code, stderr) = status_and_stderr(&result);
                    assert_eq!(code, 1, "case {case} at -j {threads} got through: {stderr}");
                    assert!(!stderr.contains("panicked"), "{stderr}");
                    assert_eq!(listing(&case_dir), ["x.pcr"], "case {case} left output");
                    std::fs::remove_dir_all(&case_dir).unwrap();
                }
            });
        }
    });
}

/// Every line on stderr is written at once: under `mpirun` each rank's stderr reaches the
/// terminal through a pipe that other processes write too (Open MPI's own notices), and a line
/// written in pieces (as `eprintln!` writes it: one `write` per piece of its format) came out
/// split by another process's output, here a rank's "no progress" report, so a log or a script
/// matching on it did not see it. Stderr here is a `SOCK_SEQPACKET` socket, which keeps every
/// `write` a message of its own: each message must be one whole line.
#[test]
fn every_line_on_stderr_is_written_at_once() {
    use rustix::net::{AddressFamily, RecvFlags, SocketFlags, SocketType, recv, socketpair};
    let dir = scratch();
    let (ours, theirs) = socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )
    .unwrap();
    // A legacy cipher's warnings, then the error of an output in a directory not there.
    let input = write(dir.path(), "in", b"x");
    let mut cmd = paracrypt();
    cmd.args(["raw", "-e", "-c", "des-ecb", "-K", "1111111111111111"])
        .arg(&input)
        .arg("-o")
        .arg(dir.path().join("missing").join("out"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(theirs));
    let mut child = cmd.spawn().unwrap();
    // The child holds the only other end now: the reads below end when it exits.
    drop(cmd);
    let mut messages = Vec::new();
    loop {
        let mut buf = vec![0u8; 1 << 16];
        let (n, _) = recv(&ours, &mut buf[..], RecvFlags::empty()).unwrap();
        if n == 0 {
            break;
        }
        buf.truncate(n);
        messages.push(String::from_utf8(buf).unwrap());
    }
    assert_eq!(child.wait().unwrap().code(), Some(1), "{messages:?}");
    for message in &messages {
        assert!(
            message.ends_with('\n') && message.matches('\n').count() == 1,
            "a line written in pieces: {messages:?}"
        );
    }
    assert!(
        messages.iter().any(|m| m.contains("warning: des-ecb"))
            && messages.iter().any(|m| m.starts_with("paracrypt: error: ")),
        "{messages:?}"
    );
}
