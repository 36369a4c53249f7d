//! age plugins: recipients `age1NAME1…` and identities `AGE-PLUGIN-NAME-1…` whose keys live
//! where the plugin `age-plugin-NAME` keeps them (a YubiKey, a TPM, a Secure Enclave, a remote
//! service), reached through the plugin protocol (C2SP `age-plugin.md`): both of its state
//! machines, `recipient-v1` to wrap file keys and `identity-v1` to unwrap them.
//!
//! # Why paracrypt has its own client
//!
//! The `age` crate has a plugin client (its `plugin` feature, which paracrypt enables for the
//! parsers of plugin recipients and identities), but it does not do what paracrypt needs:
//! - **One session for many files.** Both state machines take many files at once (file
//!   indices), so that a hardware key is touched and its PIN typed once for a batch; age's
//!   [`Identity`](age::Identity) starts the plugin again for every file it is asked about.
//! - **A plugin that hangs is stopped.** age's client owns the plugin's process inside
//!   age-core's `Connection` and never kills it; a plugin that stops answering blocks for ever.
//!   Here a watchdog kills the plugin after [`TIMEOUT_ENV`] seconds of silence (60 by
//!   default; time spent waiting for the user's answer does not count), and says so.
//! - **Bounded reads and one-line errors** naming the plugin, what it was doing, its exit
//!   status and the last line of its standard error.
//!
//! The wire format (stanzas) is age-core's own reader and writer; what is paracrypt's is the
//! two state machines around them, the process and its watchdog.
//!
//! # Talking to the user
//!
//! A plugin may show a message (`msg`: written to standard error, prefixed with the plugin's
//! name), ask to confirm, and ask for a public value or a secret (a PIN). Confirmations and
//! values are asked on the terminal (`/dev/tty`) when there is one. A secret is taken from
//! [`SECRET_ENV`] when it is set (the answer source for runs without a terminal: batch jobs,
//! `--distributed`, Python), else asked on the terminal. A request nobody can answer is
//! answered `fail`, as the protocol says (the plugin decides what follows), and when the file
//! key then does not come, the error names the plugin and what it asked.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use age::secrecy::{ExposeSecret, SecretString};
use age_core::format::{FILE_KEY_BYTES, FileKey, Stanza};
use base64::Engine;
use base64::prelude::BASE64_STANDARD_NO_PAD;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::error::{Error, Result};

/// The environment variable that sets how long a plugin may stay silent, in seconds (default
/// [`DEFAULT_TIMEOUT`]); the time spent waiting for the user's answer does not count.
pub const TIMEOUT_ENV: &str = "PARACRYPT_PLUGIN_TIMEOUT";

/// The environment variable whose value answers a plugin's requests for a secret (a PIN),
/// where no terminal can ask. It is not passed on to the plugin's environment.
pub const SECRET_ENV: &str = "PARACRYPT_PLUGIN_SECRET";

/// How long a plugin may stay silent by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest line read from a plugin (64 KiB: a stanza's arguments are far shorter).
const MAX_LINE: u64 = 64 << 10;
/// The most bytes one command from a plugin may hold (1 MiB, as a header's recipient block).
const MAX_COMMAND: usize = 1 << 20;

/// The environment a plugin is started without: paracrypt's own secrets.
const WITHHELD_ENV: [&str; 3] = [SECRET_ENV, "PARACRYPT_PASSWORD", "PARACRYPT_NEW_PASSWORD"];

const RECIPIENT_V1: &str = "recipient-v1";
const IDENTITY_V1: &str = "identity-v1";

/// A plugin recipient or identity string, with its plugin's name.
#[derive(Clone)]
pub(crate) struct Target {
    /// The plugin's name (lowercase).
    pub plugin: String,
    /// The recipient or identity, as given.
    pub text: String,
    /// An identity (given as a recipient: the plugin wraps to it), else a recipient.
    pub identity: bool,
}

impl Target {
    /// A plugin recipient `age1NAME1…`, or why it is not one.
    pub fn recipient(text: &str) -> std::result::Result<Self, String> {
        let parsed: age::plugin::Recipient = text
            .parse()
            .map_err(|e| format!("not a valid age plugin recipient ({e})"))?;
        Ok(Target {
            plugin: parsed.plugin().to_owned(),
            text: text.to_owned(),
            identity: false,
        })
    }

    /// A plugin identity `AGE-PLUGIN-NAME-1…`, or why it is not one.
    pub fn identity(text: &str) -> std::result::Result<Self, String> {
        let parsed: age::plugin::Identity = text
            .parse()
            .map_err(|e| format!("not a valid age plugin identity ({e})"))?;
        Ok(Target {
            plugin: parsed.plugin().to_owned(),
            text: text.to_owned(),
            identity: true,
        })
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Target")
            .field("plugin", &self.plugin)
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

/// The binary of plugin `name`.
fn binary(name: &str) -> String {
    format!("age-plugin-{name}")
}

fn fail(plugin: &str, reason: impl Into<String>) -> Error {
    Error::Plugin {
        plugin: binary(plugin),
        reason: reason.into(),
    }
}

/// Text from a plugin as an error quotes it: at most 200 characters, control characters
/// escaped (a message stays one line).
fn quoted(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(200)
        .flat_map(char::escape_debug)
        .collect();
    if text.chars().nth(200).is_some() {
        out.push('…');
    }
    out
}

/// The plugin binary `age-plugin-NAME` on `PATH`. Only absolute directories are searched: a
/// relative entry (or an empty one, the working directory) never is, as the protocol requires.
pub fn find(name: &str) -> Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let file = binary(name);
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(&file))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .ok_or_else(|| {
            fail(
                name,
                "not found on PATH (install the plugin, or add its directory to PATH)",
            )
        })
}

/// How long a plugin may stay silent: [`TIMEOUT_ENV`], else [`DEFAULT_TIMEOUT`].
fn timeout(name: &str) -> Result<Duration> {
    match std::env::var(TIMEOUT_ENV) {
        Err(_) => Ok(DEFAULT_TIMEOUT),
        Ok(text) => match text.trim().parse::<f64>() {
            Ok(seconds) if seconds > 0.0 && seconds.is_finite() => {
                Ok(Duration::from_secs_f64(seconds.min(1e9)))
            }
            _ => Err(fail(
                name,
                format!(
                    "{TIMEOUT_ENV}=`{}` is not a number of seconds above 0",
                    quoted(&text)
                ),
            )),
        },
    }
}

/// What the user was asked and could not answer, for the error that follows.
#[derive(Default)]
struct Unanswered(Vec<String>);

/// Asks the user what a plugin asks: see the [module](self).
struct Ui<'a> {
    plugin: &'a str,
    unanswered: Unanswered,
}

impl Ui<'_> {
    fn terminal() -> Option<std::fs::File> {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .ok()
    }

    /// Shows a plugin's message on stderr, in one `write` so that no other process's output
    /// lands inside the line (`eprintln!` writes each piece apart).
    fn message(&self, message: &str) {
        let line = format!("paracrypt: {}: {}\n", binary(self.plugin), quoted(message));
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    /// A line typed on the terminal after `prompt`, or `None` without a terminal.
    fn ask_line(&self, prompt: &str) -> Option<String> {
        let mut tty = Self::terminal()?;
        write!(tty, "{}: {prompt}", binary(self.plugin)).ok()?;
        tty.flush().ok()?;
        let mut line = String::new();
        BufReader::new(tty).read_line(&mut line).ok()?;
        Some(line.trim_end_matches(['\r', '\n']).to_owned())
    }

    fn confirm(&mut self, message: &str, yes: &str, no: Option<&str>) -> Option<bool> {
        let choices = match no {
            Some(no) => format!("[{yes}/{no}]"),
            None => format!("[{yes}]"),
        };
        match self.ask_line(&format!("{} {choices} ", quoted(message))) {
            Some(answer) => Some(
                answer.eq_ignore_ascii_case(yes)
                    || answer.eq_ignore_ascii_case("y")
                    || answer.eq_ignore_ascii_case("yes"),
            ),
            None => {
                self.unanswered
                    .0
                    .push(format!("asked to confirm \"{}\"", quoted(message)));
                None
            }
        }
    }

    fn public(&mut self, message: &str) -> Option<String> {
        let answer = self.ask_line(&format!("{} ", quoted(message)));
        if answer.is_none() {
            self.unanswered
                .0
                .push(format!("asked for a value (\"{}\")", quoted(message)));
        }
        answer
    }

    fn secret(&mut self, message: &str) -> Option<SecretString> {
        if let Ok(secret) = std::env::var(SECRET_ENV) {
            return Some(SecretString::from(secret));
        }
        if Self::terminal().is_some()
            && let Ok(secret) =
                rpassword::prompt_password(format!("{}: {} ", binary(self.plugin), quoted(message)))
        {
            return Some(SecretString::from(secret));
        }
        self.unanswered.0.push(format!(
            "asked for a secret (\"{}\") and there is no terminal to ask on (set {SECRET_ENV} to \
             answer it)",
            quoted(message)
        ));
        None
    }
}

/// What the watchdog shares with a session.
struct Watch {
    /// When the plugin is killed unless it speaks; `None` while the user is being asked.
    deadline: Option<Instant>,
    /// The session is over.
    finished: bool,
    /// The plugin was killed for its silence.
    fired: bool,
}

/// Kills a plugin that stays silent past its deadline.
struct Watchdog {
    state: Arc<(Mutex<Watch>, Condvar)>,
    timeout: Duration,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    fn start(child: Arc<Mutex<Child>>, timeout: Duration) -> Self {
        let state = Arc::new((
            Mutex::new(Watch {
                deadline: Some(Instant::now() + timeout),
                finished: false,
                fired: false,
            }),
            Condvar::new(),
        ));
        let shared = Arc::clone(&state);
        let thread = std::thread::Builder::new()
            .name("paracrypt-plugin-watchdog".into())
            .spawn(move || {
                let (lock, wake) = &*shared;
                let mut watch = lock.lock().unwrap_or_else(|e| e.into_inner());
                loop {
                    if watch.finished {
                        return;
                    }
                    match watch.deadline {
                        None => watch = wake.wait(watch).unwrap_or_else(|e| e.into_inner()),
                        Some(deadline) => {
                            let now = Instant::now();
                            if now >= deadline {
                                watch.fired = true;
                                let _ = child.lock().unwrap_or_else(|e| e.into_inner()).kill();
                                return;
                            }
                            watch = wake
                                .wait_timeout(watch, deadline - now)
                                .unwrap_or_else(|e| e.into_inner())
                                .0;
                        }
                    }
                }
            })
            .ok();
        Watchdog {
            state,
            timeout,
            thread,
        }
    }

    fn set(&self, deadline: Option<Instant>) {
        let (lock, wake) = &*self.state;
        lock.lock().unwrap_or_else(|e| e.into_inner()).deadline = deadline;
        wake.notify_all();
    }

    /// The plugin has spoken, or the user has answered: its silence is counted from now.
    fn rearm(&self) {
        self.set(Some(Instant::now() + self.timeout));
    }

    /// The user is being asked: the plugin's silence is not the plugin's fault.
    fn pause(&self) {
        self.set(None);
    }

    fn fired(&self) -> bool {
        self.state.0.lock().unwrap_or_else(|e| e.into_inner()).fired
    }

    fn finish(&mut self) {
        {
            let (lock, wake) = &*self.state;
            lock.lock().unwrap_or_else(|e| e.into_inner()).finished = true;
            wake.notify_all();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Why a session ended before its `done`.
enum Broken {
    /// The pipe failed: the plugin exited, crashed or was killed.
    Pipe,
    /// The plugin said something that is not the protocol.
    Protocol(String),
}

/// One running plugin: its process, pipes, watchdog and the tail of its standard error.
struct Session {
    name: String,
    /// What the session does, for errors ("wrapping the file key").
    doing: &'static str,
    child: Arc<Mutex<Child>>,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    stderr: Option<JoinHandle<Vec<u8>>>,
    watchdog: Watchdog,
}

impl Session {
    fn start(name: &str, state_machine: &str, doing: &'static str) -> Result<Self> {
        let path = find(name)?;
        let timeout = timeout(name)?;
        let mut command = Command::new(&path);
        command
            .arg(format!("--age-plugin={state_machine}"))
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for withheld in WITHHELD_ENV {
            command.env_remove(withheld);
        }
        let mut child = command
            .spawn()
            .map_err(|e| fail(name, format!("cannot start {}: {e}", path.display())))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut stderr = child.stderr.take().expect("piped");
        // The last 4 KiB of the plugin's standard error, for the error that names its failure.
        let stderr = std::thread::Builder::new()
            .name("paracrypt-plugin-stderr".into())
            .spawn(move || {
                let mut tail = Vec::new();
                let mut buf = [0u8; 4096];
                while let Ok(n) = stderr.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    tail.extend_from_slice(&buf[..n]);
                    if tail.len() > 8192 {
                        tail.drain(..tail.len() - 4096);
                    }
                }
                tail
            })
            .ok();
        let child = Arc::new(Mutex::new(child));
        let watchdog = Watchdog::start(Arc::clone(&child), timeout);
        Ok(Session {
            name: name.to_owned(),
            doing,
            child,
            stdin: Some(stdin),
            stdout,
            stderr,
            watchdog,
        })
    }

    fn send(&mut self, tag: &str, args: &[&str], body: &[u8]) -> std::result::Result<(), Broken> {
        let bytes = Zeroizing::new(
            cookie_factory::r#gen(
                age_core::format::write::age_stanza(tag, args, body),
                Vec::new(),
            )
            .expect("writing into a Vec cannot fail")
            .0,
        );
        let stdin = self.stdin.as_mut().ok_or(Broken::Pipe)?;
        stdin
            .write_all(&bytes)
            .and_then(|()| stdin.flush())
            .map_err(|_| Broken::Pipe)
    }

    /// One line from the plugin, at most [`MAX_LINE`] bytes, its newline included.
    fn line(&mut self, into: &mut Vec<u8>) -> std::result::Result<(), Broken> {
        let start = into.len();
        let n = (&mut self.stdout)
            .take(MAX_LINE)
            .read_until(b'\n', into)
            .map_err(|_| Broken::Pipe)?;
        if n == 0 {
            return Err(Broken::Pipe);
        }
        if into[start..].last() != Some(&b'\n') {
            return Err(if n as u64 == MAX_LINE {
                Broken::Protocol("a line longer than 64 KiB".into())
            } else {
                Broken::Pipe
            });
        }
        Ok(())
    }

    /// The next command from the plugin: a stanza, read line by line (its first line, then
    /// body lines up to the first shorter than 64 columns) and parsed by age-core.
    fn receive(&mut self) -> std::result::Result<Stanza, Broken> {
        let mut bytes = Zeroizing::new(Vec::new());
        self.line(&mut bytes)?;
        if !bytes.starts_with(b"-> ") {
            return Err(Broken::Protocol(format!(
                "`{}` where a command (`-> …`) belongs",
                quoted(String::from_utf8_lossy(&bytes).trim_end())
            )));
        }
        loop {
            let start = bytes.len();
            self.line(&mut bytes)?;
            if bytes.len() > MAX_COMMAND {
                return Err(Broken::Protocol("a command larger than 1 MiB".into()));
            }
            // Without its newline (and a carriage return), a full body line is 64 columns.
            if bytes.len() - start - 1 < 64 {
                break;
            }
        }
        self.watchdog.rearm();
        match age_core::format::read::age_stanza(&bytes) {
            Ok(([], stanza)) => Ok(Stanza::from(stanza)),
            _ => Err(Broken::Protocol(format!(
                "a malformed command `{}`",
                quoted(
                    String::from_utf8_lossy(&bytes)
                        .lines()
                        .next()
                        .unwrap_or_default()
                )
            ))),
        }
    }

    /// Phase 1's `done`, and the plugin's commands of phase 2 until its `done`, each handed
    /// to `handle` (with the user interface) and answered with what it returns; grease and
    /// commands this client does not know are answered `unsupported`.
    fn converse(
        &mut self,
        known: &[&str],
        ui: &mut Ui<'_>,
        mut handle: impl FnMut(Stanza, &mut Ui<'_>, &Watchdog) -> std::result::Result<Reply, Broken>,
    ) -> std::result::Result<(), Broken> {
        self.send("done", &[], &[])?;
        loop {
            let command = self.receive()?;
            if command.tag == "done" {
                return Ok(());
            }
            let reply = if known.contains(&command.tag.as_str()) {
                handle(command, ui, &self.watchdog)?
            } else {
                Reply::Unsupported
            };
            match reply {
                Reply::Ok(args, body) => {
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    self.send("ok", &args, &body)?;
                }
                Reply::Fail => self.send("fail", &[], &[])?,
                Reply::Unsupported => self.send("unsupported", &[], &[])?,
            }
        }
    }

    /// What went wrong, once a session broke: the watchdog's timeout, a protocol violation,
    /// or the plugin's exit (with the last line of its standard error).
    fn explain(&mut self, broken: Broken) -> Error {
        self.stdin = None;
        // A plugin that closed its output is given a moment to exit by itself (its status
        // says why it stopped), then killed.
        let grace = match broken {
            Broken::Pipe => Duration::from_secs(2),
            Broken::Protocol(_) => Duration::ZERO,
        };
        let status = self.reap(grace);
        let timed_out = self.watchdog.fired();
        self.watchdog.finish();
        let tail = self
            .stderr
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        let said = String::from_utf8_lossy(&tail)
            .lines()
            .rev()
            .find(|line| !line.trim().is_empty())
            .map(|line| format!(": {}", quoted(line.trim())))
            .unwrap_or_default();
        let doing = self.doing;
        let reason = match broken {
            _ if timed_out => format!(
                "no answer within {} s while {doing}: stopped (set {TIMEOUT_ENV} to wait longer)",
                seconds(self.watchdog.timeout)
            ),
            Broken::Protocol(what) => {
                format!("answered out of protocol while {doing}: {what}")
            }
            Broken::Pipe => {
                use std::os::unix::process::ExitStatusExt;
                match status {
                    Some(s) if s.code().is_some() => format!(
                        "exited with status {} while {doing}{said}",
                        s.code().unwrap_or_default()
                    ),
                    Some(s) if s.signal().is_some() => format!(
                        "was killed by signal {} while {doing}{said}",
                        s.signal().unwrap_or_default()
                    ),
                    _ => format!("stopped answering while {doing}{said}"),
                }
            }
        };
        fail(&self.name, reason)
    }

    /// The plugin's exit status, waiting at most `grace` for it to exit before killing it.
    fn reap(&self, grace: Duration) -> Option<std::process::ExitStatus> {
        let until = Instant::now() + grace;
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < until => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                _ => break,
            }
        }
        let _ = child.kill();
        child.wait().ok()
    }

    /// After the plugin's `done`: its standard input closed, and the process waited for (the
    /// watchdog still kills one that does not exit).
    fn close(mut self) {
        self.stdin = None;
        let _ = self.child.lock().unwrap_or_else(|e| e.into_inner()).wait();
        self.watchdog.finish();
        if let Some(thread) = self.stderr.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // A session left early (a panic): the plugin never outlives it.
        if self.stderr.is_some() {
            self.stdin = None;
            let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
            let _ = child.kill();
            let _ = child.wait();
            drop(child);
            self.watchdog.finish();
        }
    }
}

fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{}", s as u64)
    } else {
        format!("{s}")
    }
}

/// An answer to a command of the plugin's.
enum Reply {
    Ok(Vec<String>, Vec<u8>),
    Fail,
    Unsupported,
}

impl Reply {
    fn ok() -> Self {
        Reply::Ok(Vec::new(), Vec::new())
    }
}

/// The commands both state machines' second phase share: `msg`, `confirm`, `request-public`
/// and `request-secret`. `None` for another command.
fn interact(
    command: &Stanza,
    ui: &mut Ui<'_>,
    watchdog: &Watchdog,
) -> Option<std::result::Result<Reply, Broken>> {
    let message = String::from_utf8_lossy(&command.body).into_owned();
    let reply = match command.tag.as_str() {
        "msg" => {
            ui.message(&message);
            Reply::ok()
        }
        "confirm" => {
            let strings: Vec<_> = command
                .args
                .iter()
                .take(2)
                .map(|arg| BASE64_STANDARD_NO_PAD.decode(arg))
                .collect();
            let strings: std::result::Result<Vec<_>, _> = strings.into_iter().collect();
            let Ok(strings) = strings else {
                return Some(Err(Broken::Protocol(
                    "a confirm whose choices are not base64".into(),
                )));
            };
            let Some(yes) = strings.first() else {
                return Some(Err(Broken::Protocol("a confirm without choices".into())));
            };
            let yes = String::from_utf8_lossy(yes).into_owned();
            let no = strings
                .get(1)
                .map(|no| String::from_utf8_lossy(no).into_owned());
            watchdog.pause();
            let answer = ui.confirm(&message, &yes, no.as_deref());
            watchdog.rearm();
            match answer {
                Some(true) => Reply::Ok(vec!["yes".into()], Vec::new()),
                Some(false) => Reply::Ok(vec!["no".into()], Vec::new()),
                None => Reply::Fail,
            }
        }
        "request-public" => {
            watchdog.pause();
            let answer = ui.public(&message);
            watchdog.rearm();
            match answer {
                Some(value) => Reply::Ok(Vec::new(), value.into_bytes()),
                None => Reply::Fail,
            }
        }
        "request-secret" => {
            watchdog.pause();
            let answer = ui.secret(&message);
            watchdog.rearm();
            match answer {
                Some(secret) => Reply::Ok(Vec::new(), secret.expose_secret().as_bytes().to_vec()),
                None => Reply::Fail,
            }
        }
        _ => return None,
    };
    Some(Ok(reply))
}

/// A plugin's `error` command, as words: `who` names the identity or recipient an index
/// points at.
fn error_words(command: &Stanza, who: impl Fn(&str, usize) -> Option<String>) -> String {
    let message = quoted(&String::from_utf8_lossy(&command.body));
    let target = match &command.args[..] {
        [kind, index] => index.parse::<usize>().ok().and_then(|i| who(kind, i)),
        [kind, file, stanza] if kind == "stanza" => Some(format!("file {file}, stanza {stanza}")),
        _ => None,
    };
    match target {
        Some(target) => format!("{target}: {message}"),
        None => message,
    }
}

/// A recipient or identity as an error names it: its first 24 characters.
fn short(text: &str) -> String {
    let head: String = text.chars().take(24).collect();
    if text.chars().nth(24).is_some() {
        format!("{head}…")
    } else {
        head
    }
}

/// Wraps each of `file_keys` for every target of plugin `name` (its recipients, and its
/// identities given as recipients) in one `recipient-v1` session: the stanzas of each file,
/// in order, and the plugin's labels.
pub(crate) fn wrap(
    name: &str,
    targets: &[&Target],
    file_keys: &[&FileKey],
) -> Result<(Vec<Vec<Stanza>>, HashSet<String>)> {
    let doing = if file_keys.len() == 1 {
        "wrapping the file key"
    } else {
        "wrapping the file keys"
    };
    let mut session = Session::start(name, RECIPIENT_V1, doing)?;
    let recipients: Vec<&Target> = targets.iter().copied().filter(|t| !t.identity).collect();
    let identities: Vec<&Target> = targets.iter().copied().filter(|t| t.identity).collect();
    let mut stanzas: Vec<Vec<Stanza>> = file_keys.iter().map(|_| Vec::new()).collect();
    let mut labels: Option<HashSet<String>> = None;
    let mut errors: Vec<String> = Vec::new();
    let mut ui = Ui {
        plugin: name,
        unanswered: Unanswered::default(),
    };
    let result = (|| {
        for recipient in &recipients {
            session.send("add-recipient", &[&recipient.text], &[])?;
        }
        for identity in &identities {
            session.send("add-identity", &[&identity.text], &[])?;
        }
        session.send("extension-labels", &[], &[])?;
        for key in file_keys {
            session.send("wrap-file-key", &[], key.expose_secret())?;
        }
        let known = [
            "msg",
            "confirm",
            "request-public",
            "request-secret",
            "recipient-stanza",
            "labels",
            "error",
        ];
        session.converse(&known, &mut ui, |command, ui, watchdog| {
            if let Some(reply) = interact(&command, ui, watchdog) {
                return reply;
            }
            match command.tag.as_str() {
                "recipient-stanza" => {
                    let mut args = command.args.into_iter();
                    let (Some(index), Some(tag)) = (args.next(), args.next()) else {
                        return Err(Broken::Protocol(
                            "a recipient-stanza without a file index and a tag".into(),
                        ));
                    };
                    let file = index
                        .parse::<usize>()
                        .ok()
                        .filter(|&i| i < file_keys.len())
                        .ok_or_else(|| {
                            Broken::Protocol(format!(
                                "a recipient-stanza for file {}, which was not asked for",
                                quoted(&index)
                            ))
                        })?;
                    stanzas[file].push(Stanza {
                        tag,
                        args: args.collect(),
                        body: command.body,
                    });
                    Ok(Reply::ok())
                }
                "labels" => {
                    if labels.is_some() {
                        return Err(Broken::Protocol("labels sent twice".into()));
                    }
                    let count = command.args.len();
                    let set: HashSet<String> = command.args.into_iter().collect();
                    if set.len() != count {
                        return Err(Broken::Protocol("the same label twice".into()));
                    }
                    labels = Some(set);
                    Ok(Reply::ok())
                }
                "error" => {
                    errors.push(error_words(&command, |kind, i| match kind {
                        "recipient" => recipients
                            .get(i)
                            .map(|r| format!("recipient {}", short(&r.text))),
                        "identity" => identities.get(i).map(|_| format!("identity {}", i + 1)),
                        _ => None,
                    }));
                    Ok(Reply::ok())
                }
                _ => Ok(Reply::Unsupported),
            }
        })
    })();
    if let Err(broken) = result {
        return Err(session.explain(broken));
    }
    session.close();
    if !errors.is_empty() || stanzas.iter().any(Vec::is_empty) {
        let mut reason = if errors.is_empty() {
            "returned no stanza for a file key".to_owned()
        } else {
            errors.join("; ")
        };
        if let Some(asked) = ui.unanswered.0.first() {
            reason = format!("{asked}; it then said: {reason}");
        }
        return Err(fail(name, reason));
    }
    Ok((stanzas, labels.unwrap_or_default()))
}

/// What one `identity-v1` session gave for one file.
#[derive(Clone)]
pub(crate) enum Opened {
    /// The file key.
    Key(Arc<FileKey>),
    /// None of the identities opens the file (no error said otherwise).
    NotMine,
    /// The plugin failed, or a question it asked was left unanswered.
    Failed(String),
    /// The plugin said why its identities could not open this file (a wrong PIN).
    Refused(String),
}

/// Unwraps the file keys of `files` (each a header's stanzas) with the identities of plugin
/// `name` in one `identity-v1` session: one outcome per file.
pub(crate) fn unwrap(name: &str, identities: &[&Target], files: &[&[Stanza]]) -> Vec<Opened> {
    let doing = if files.len() == 1 {
        "unwrapping the file key"
    } else {
        "unwrapping the file keys"
    };
    let mut session = match Session::start(name, IDENTITY_V1, doing) {
        Ok(session) => session,
        Err(e) => {
            let reason = match e {
                Error::Plugin { reason, .. } => reason,
                other => other.to_string(),
            };
            return vec![Opened::Failed(reason); files.len()];
        }
    };
    let mut keys: Vec<Option<Arc<FileKey>>> = vec![None; files.len()];
    // Errors for one file, and for all (an identity's or the plugin's own); whether the
    // plugin's own (`internal`, or about nothing it was given) is among them.
    let mut file_errors: HashMap<usize, Vec<String>> = HashMap::new();
    let mut errors: Vec<String> = Vec::new();
    let mut internal = false;
    let mut ui = Ui {
        plugin: name,
        unanswered: Unanswered::default(),
    };
    let result = (|| {
        for identity in identities {
            session.send("add-identity", &[&identity.text], &[])?;
        }
        for (index, stanzas) in files.iter().enumerate() {
            let index = index.to_string();
            for stanza in *stanzas {
                let args: Vec<&str> = [index.as_str(), stanza.tag.as_str()]
                    .into_iter()
                    .chain(stanza.args.iter().map(String::as_str))
                    .collect();
                session.send("recipient-stanza", &args, &stanza.body)?;
            }
        }
        let known = [
            "msg",
            "confirm",
            "request-public",
            "request-secret",
            "file-key",
            "error",
        ];
        session.converse(&known, &mut ui, |command, ui, watchdog| {
            if let Some(reply) = interact(&command, ui, watchdog) {
                return reply;
            }
            match command.tag.as_str() {
                "file-key" => {
                    let file = match &command.args[..] {
                        [index] => index.parse::<usize>().ok().filter(|&i| i < files.len()),
                        _ => None,
                    };
                    let Some(file) = file else {
                        return Err(Broken::Protocol(format!(
                            "a file-key for `{}`, which was not asked for",
                            quoted(&command.args.join(" "))
                        )));
                    };
                    if keys[file].is_some() {
                        return Err(Broken::Protocol(format!("two file keys for file {file}")));
                    }
                    let key: [u8; FILE_KEY_BYTES] = command.body[..].try_into().map_err(|_| {
                        Broken::Protocol(format!(
                            "a file key of {} bytes (a file key is {FILE_KEY_BYTES})",
                            command.body.len()
                        ))
                    })?;
                    keys[file] = Some(Arc::new(FileKey::new(Box::new(key))));
                    Ok(Reply::ok())
                }
                "error" => {
                    let words = error_words(&command, |kind, i| match kind {
                        "identity" => identities.get(i).map(|_| format!("identity {}", i + 1)),
                        _ => None,
                    });
                    match &command.args[..] {
                        [kind, file, _] if kind == "stanza" => match file.parse::<usize>() {
                            Ok(file) if file < files.len() => {
                                file_errors.entry(file).or_default().push(words)
                            }
                            _ => {
                                internal = true;
                                errors.push(words)
                            }
                        },
                        [kind, index] if kind == "identity" => {
                            internal |= index
                                .parse::<usize>()
                                .map_or(true, |i| i >= identities.len());
                            errors.push(words)
                        }
                        _ => {
                            internal = true;
                            errors.push(words)
                        }
                    }
                    Ok(Reply::ok())
                }
                _ => Ok(Reply::Unsupported),
            }
        })
    })();
    if let Err(broken) = result {
        let reason = match session.explain(broken) {
            Error::Plugin { reason, .. } => reason,
            other => other.to_string(),
        };
        return vec![Opened::Failed(reason); files.len()];
    }
    session.close();
    keys.into_iter()
        .enumerate()
        .map(|(file, key)| match key {
            Some(key) => Opened::Key(key),
            None => {
                let mut said: Vec<String> = file_errors.remove(&file).unwrap_or_default();
                said.extend(errors.iter().cloned());
                match (ui.unanswered.0.first(), said.is_empty()) {
                    (None, true) => Opened::NotMine,
                    (None, false) if !internal => Opened::Refused(said.join("; ")),
                    (None, false) => Opened::Failed(said.join("; ")),
                    (Some(asked), true) => Opened::Failed(asked.clone()),
                    (Some(asked), false) => {
                        Opened::Failed(format!("{asked}; it then said: {}", said.join("; ")))
                    }
                }
            }
        })
        .collect()
}

/// The identities of one plugin, with what its sessions gave for the headers it was asked
/// about (so that a header asked about again, or unwrapped ahead in a batch, costs no new
/// session).
pub(crate) struct PluginIdentities {
    pub name: String,
    pub targets: Vec<Target>,
    opened: Mutex<HashMap<[u8; 32], Opened>>,
    /// One session at a time (a hardware key is one device).
    session: Mutex<()>,
}

impl PluginIdentities {
    pub fn new(name: String) -> Self {
        PluginIdentities {
            name,
            targets: Vec::new(),
            opened: Mutex::new(HashMap::new()),
            session: Mutex::new(()),
        }
    }

    /// The outcomes for `files`, from memory where a session already gave them, else from one
    /// new session for all the others.
    pub fn open(&self, files: &[&[Stanza]]) -> Vec<Opened> {
        let _one_at_a_time = self.session.lock().unwrap_or_else(|e| e.into_inner());
        let digests: Vec<[u8; 32]> = files.iter().map(|f| digest(f)).collect();
        let mut outcomes: Vec<Option<Opened>> = {
            let opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
            digests.iter().map(|d| opened.get(d).cloned()).collect()
        };
        let missing: Vec<usize> = (0..files.len())
            .filter(|&i| outcomes[i].is_none())
            .collect();
        if !missing.is_empty() {
            let mut unique: Vec<usize> = Vec::new();
            for &i in &missing {
                if !unique.iter().any(|&j| digests[j] == digests[i]) {
                    unique.push(i);
                }
            }
            let asked: Vec<&[Stanza]> = unique.iter().map(|&i| files[i]).collect();
            let targets: Vec<&Target> = self.targets.iter().collect();
            let got = unwrap(&self.name, &targets, &asked);
            let mut opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
            for (&i, outcome) in unique.iter().zip(got) {
                opened.insert(digests[i], outcome);
            }
            for &i in &missing {
                outcomes[i] = opened.get(&digests[i]).cloned();
            }
        }
        outcomes
            .into_iter()
            .map(|o| o.expect("every file has an outcome"))
            .collect()
    }
}

/// What identifies a header's stanzas (their encoding, hashed).
fn digest(stanzas: &[Stanza]) -> [u8; 32] {
    let mut encoded = Zeroizing::new(Vec::new());
    super::write_stanzas(stanzas, &mut encoded);
    Sha256::digest(&encoded[..]).into()
}
