//! Object storage end to end: `paracrypt` against a real S3 server on 127.0.0.1 — moto's
//! standalone server (PyPI `moto`, pinned in tests/s3/requirements.txt; tests/s3/server.py
//! says why moto and not s3s-fs) — with SigV4 checked, optionally behind a proxy of ours that
//! counts the bytes the server sends and injects faults. The client is paracrypt's own
//! (object_store): no call is mocked.
//!
//! One server runs per test binary, started by the first test that needs it; it ends when the
//! test process ends, however it ends (it serves until its standard input closes). Each test
//! works in a bucket of its own. `scripts/test.sh` installs the server into target/s3-venv;
//! `PARACRYPT_S3_PYTHON` names another Python that has it.
#![cfg(feature = "s3")]

#[cfg(feature = "mpi")]
mod distributed;
mod faults;
mod proxy;
mod reads;
mod roundtrip;
mod trees;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

#[cfg(feature = "mpi")]
pub use proxy::Request;
pub use proxy::{Action, Proxy};

use crate::common::paracrypt;

/// A test server written in Python (tests/s3/server.py, tests/kms/server.py): started with
/// `python SCRIPT`, it says `READY WORD…` on its first line, then answers each JSON command on
/// its standard input with one JSON line, and serves until its standard input closes.
pub struct Script {
    /// The words after `READY`.
    pub ready: Vec<String>,
    /// Commands in, answers out (serialised).
    io: Mutex<(ChildStdin, BufReader<ChildStdout>)>,
    child: Mutex<Child>,
}

impl Script {
    /// Starts `script` (relative to the workspace) with `python`.
    pub fn start(python: &Path, script: &str) -> Script {
        let mut child = Command::new(python)
            .arg(workspace().join(script))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {script}: {e}"));
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout
            .read_line(&mut line)
            .expect("the server's first line");
        let mut words = line.split_whitespace().map(str::to_owned);
        assert_eq!(
            words.next().as_deref(),
            Some("READY"),
            "{script} said: {line}"
        );
        Script {
            ready: words.collect(),
            io: Mutex::new((stdin, stdout)),
            child: Mutex::new(child),
        }
    }

    /// Runs one command and returns its result.
    pub fn command(&self, command: serde_json::Value) -> serde_json::Value {
        let mut io = self.io.lock().unwrap();
        writeln!(io.0, "{command}").unwrap();
        io.0.flush().unwrap();
        let mut line = String::new();
        io.1.read_line(&mut line).unwrap();
        let answer: serde_json::Value = serde_json::from_str(&line).expect("a JSON answer");
        assert_eq!(answer["ok"], true, "{command}: {answer}");
        answer["result"].clone()
    }

    /// Kills the server (SIGKILL).
    pub fn kill(&self) {
        let mut child = self.child.lock().unwrap();
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The S3 server of this test process.
pub struct Server {
    pub port: u16,
    key: String,
    secret: String,
    script: Script,
}

static SERVER: OnceLock<Server> = OnceLock::new();

/// The Python that runs tests/s3/server.py (with moto installed).
fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("PARACRYPT_S3_PYTHON") {
        return python.into();
    }
    let venv = workspace().join("target/s3-venv/bin/python");
    assert!(
        venv.exists(),
        "the S3 tests need moto's server: run scripts/test.sh, or `python3 -m venv target/s3-venv \
         && target/s3-venv/bin/pip install --only-binary=:all: -r tests/s3/requirements.txt` \
         (or set PARACRYPT_S3_PYTHON)"
    );
    venv
}

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

impl Server {
    /// Starts a server of its own (for a test that kills it).
    pub fn start() -> Server {
        let script = Script::start(&python(), "tests/s3/server.py");
        Server {
            port: script.ready[0].parse().unwrap(),
            key: script.ready[1].clone(),
            secret: script.ready[2].clone(),
            script,
        }
    }

    /// The server of this test process.
    pub fn shared() -> &'static Server {
        SERVER.get_or_init(Server::start)
    }

    /// Kills the server (SIGKILL): its objects and uploads are gone with it.
    pub fn kill(&self) {
        self.script.kill();
    }

    /// Runs one command of tests/s3/server.py and returns its result.
    pub fn command(&self, command: serde_json::Value) -> serde_json::Value {
        self.script.command(command)
    }

    /// A fresh bucket.
    pub fn bucket(&self, name: &str) -> Bucket<'_> {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "pc-{}-{}",
            name.replace('_', "-"),
            N.fetch_add(1, Ordering::Relaxed)
        );
        self.command(serde_json::json!({"op": "bucket", "bucket": name}));
        Bucket { server: self, name }
    }

    /// `paracrypt` with credentials for this server, at `endpoint` (the server, or a proxy).
    pub fn client_at(&self, endpoint: &str) -> Command {
        let mut cmd = paracrypt();
        self.credentials(&mut cmd, endpoint);
        cmd
    }

    /// Gives `cmd` the environment of a client of this server at `endpoint`: its key, its
    /// endpoint, and nothing from the test's own AWS settings.
    pub fn credentials(&self, cmd: &mut Command, endpoint: &str) {
        for var in [
            "AWS_PROFILE",
            "AWS_SESSION_TOKEN",
            "AWS_DEFAULT_REGION",
            "AWS_CONFIG_FILE",
            "AWS_SHARED_CREDENTIALS_FILE",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("AWS_ACCESS_KEY_ID", &self.key)
            .env("AWS_SECRET_ACCESS_KEY", &self.secret)
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ENDPOINT_URL", endpoint)
            .env("AWS_ALLOW_HTTP", "true");
    }

    /// `paracrypt` talking to this server directly.
    pub fn client(&self) -> Command {
        self.client_at(&format!("http://127.0.0.1:{}", self.port))
    }
}

/// A bucket of one test.
pub struct Bucket<'a> {
    pub server: &'a Server,
    pub name: String,
}

impl Bucket<'_> {
    /// `s3://BUCKET/key`.
    pub fn url(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.name)
    }

    /// The multipart uploads in progress (none may be left after any run).
    pub fn uploads(&self) -> Vec<String> {
        let list = self
            .server
            .command(serde_json::json!({"op": "uploads", "bucket": self.name}));
        list.as_array()
            .unwrap()
            .iter()
            .map(|u| u["key"].as_str().unwrap().to_string())
            .collect()
    }

    /// The keys of the objects.
    pub fn objects(&self) -> Vec<String> {
        let list = self
            .server
            .command(serde_json::json!({"op": "objects", "bucket": self.name}));
        list.as_array()
            .unwrap()
            .iter()
            .map(|o| o["key"].as_str().unwrap().to_string())
            .collect()
    }

    /// An object's bytes.
    pub fn get(&self, key: &str) -> Vec<u8> {
        let dir = crate::common::scratch();
        let file = dir.path().join("object");
        self.server.command(serde_json::json!({
            "op": "get", "bucket": self.name, "key": key, "file": file,
        }));
        std::fs::read(file).unwrap()
    }

    /// Stores `file` as the object `key` (one PUT, by the server's own client).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub fn put(&self, key: &str, file: &Path) {
        self.server.command(serde_json::json!({
            "op": "put", "bucket": self.name, "key": key, "file": file,
        }));
    }

    /// Flips one bit of the stored object `key` at `offset`.
    pub fn damage(&self, key: &str, offset: u64) {
        self.server.command(serde_json::json!({
            "op": "flip", "bucket": self.name, "key": key, "offset": offset,
        }));
    }

    /// Asserts that nothing was left behind: no upload in progress, and exactly `objects`.
    #[track_caller]
    pub fn holds_only(&self, objects: &[&str]) {
        assert_eq!(
            self.uploads(),
            Vec::<String>::new(),
            "multipart uploads left"
        );
        let mut found = self.objects();
        found.sort();
        let mut want: Vec<String> = objects.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(found, want, "objects in the bucket");
    }
}
