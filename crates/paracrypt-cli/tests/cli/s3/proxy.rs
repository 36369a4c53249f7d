//! A small HTTP proxy in front of the S3 server: it counts the bytes the server sends to the
//! client, and injects faults into chosen requests (a 503 SlowDown or 500 answer in the
//! server's place, a delay). The client (paracrypt) and the server (moto)
//! stay real: the proxy only forwards, or answers in the server's stead.
//!
//! It understands just enough HTTP/1.1 to find request boundaries (a head, then a body of
//! `Content-Length` bytes or chunked): object_store does not pipeline, so each connection
//! carries one request at a time.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the proxy does with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Forward it to the server.
    Forward,
    /// Answer `503 SlowDown` (S3's throttling answer) without forwarding it.
    SlowDown,
    /// Answer `500 InternalError` without forwarding it.
    Fail,
    /// Wait this long, then forward it.
    Delay(Duration),
}

/// One request as the rule sees it.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    /// Path and query.
    pub target: String,
}

impl Request {
    /// Whether this request uploads a part (`PUT …?partNumber=N&uploadId=…`).
    pub fn is_part(&self) -> bool {
        self.method == "PUT" && self.target.contains("partNumber=")
    }

    /// Whether it completes a multipart upload (`POST …?uploadId=…`).
    pub fn is_complete(&self) -> bool {
        self.method == "POST" && self.target.contains("uploadId=")
    }
}

type Rule = dyn Fn(&Request) -> Action + Send + Sync;

/// A running proxy: it stops accepting when dropped.
pub struct Proxy {
    pub port: u16,
    /// Bytes the server (or the proxy in its stead) sent to clients.
    sent: Arc<AtomicU64>,
    /// Every request seen, with what was done with it.
    log: Arc<Mutex<Vec<(Request, Action)>>>,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    /// A proxy to the server on 127.0.0.1:`upstream` applying `rule` to every request.
    pub fn start(upstream: u16, rule: impl Fn(&Request) -> Action + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let sent = Arc::new(AtomicU64::new(0));
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let rule: Arc<Rule> = Arc::new(rule);
        {
            let (sent, log, stop) = (sent.clone(), log.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((client, _)) => {
                            client.set_nonblocking(false).unwrap();
                            let (sent, log, rule) = (sent.clone(), log.clone(), rule.clone());
                            std::thread::spawn(move || {
                                let _ = serve(client, upstream, &*rule, &sent, &log);
                            });
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
            });
        }
        Proxy {
            port,
            sent,
            log,
            stop,
        }
    }

    /// Bytes sent to clients so far (heads and bodies of every answer).
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// The requests seen so far.
    pub fn requests(&self) -> Vec<(Request, Action)> {
        self.log.lock().unwrap().clone()
    }

    /// The endpoint URL clients use.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Serves one client connection, request by request.
fn serve(
    client: TcpStream,
    upstream: u16,
    rule: &Rule,
    sent: &Arc<AtomicU64>,
    log: &Mutex<Vec<(Request, Action)>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut client_out = client;
    let mut server: Option<(TcpStream, BufReader<TcpStream>)> = None;
    loop {
        let Some((head, request, body_len)) = read_head(&mut reader)? else {
            return Ok(());
        };
        let action = rule(&request);
        log.lock().unwrap().push((request.clone(), action));
        match action {
            Action::SlowDown | Action::Fail => {
                read_body(&mut reader, body_len, &mut std::io::sink())?;
                let (status, code) = if action == Action::SlowDown {
                    ("503 Slow Down", "SlowDown")
                } else {
                    ("500 Internal Server Error", "InternalError")
                };
                let body = format!(
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code><Message>injected by the test proxy</Message></Error>"
                );
                let answer = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                client_out.write_all(answer.as_bytes())?;
                sent.fetch_add(answer.len() as u64, Ordering::Relaxed);
                return Ok(());
            }
            Action::Delay(wait) => std::thread::sleep(wait),
            Action::Forward => {}
        }
        if server.is_none() {
            let stream = TcpStream::connect(("127.0.0.1", upstream))?;
            let reader = BufReader::new(stream.try_clone()?);
            server = Some((stream, reader));
        }
        let (up, up_reader) = server.as_mut().unwrap();
        up.write_all(&head)?;
        read_body(&mut reader, body_len, up)?;
        // The answer: its head, then its body, counted.
        let Some((answer_head, _, answer_len)) = read_head(up_reader)? else {
            return Ok(());
        };
        let no_body = request.method == "HEAD";
        client_out.write_all(&answer_head)?;
        let mut counter = Counter {
            inner: &mut client_out,
            sent,
        };
        sent.fetch_add(answer_head.len() as u64, Ordering::Relaxed);
        if !no_body {
            read_body(up_reader, answer_len, &mut counter)?;
        }
        client_out.flush()?;
    }
}

/// How a message's body is framed.
#[derive(Clone, Copy, Debug)]
enum BodyLen {
    Exactly(u64),
    Chunked,
}

/// Reads a request or answer head (through the blank line); `None` at the end of the stream.
fn read_head(reader: &mut impl BufRead) -> std::io::Result<Option<(Vec<u8>, Request, BodyLen)>> {
    let mut head = Vec::new();
    let mut first = String::new();
    let mut len = BodyLen::Exactly(0);
    loop {
        let mut line = Vec::new();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(None);
        }
        head.extend_from_slice(&line);
        let text = String::from_utf8_lossy(&line).trim_end().to_string();
        if first.is_empty() {
            first = text;
            continue;
        }
        if text.is_empty() {
            break;
        }
        let lower = text.to_ascii_lowercase();
        if let Some(value) = lower.strip_prefix("content-length:") {
            len = BodyLen::Exactly(value.trim().parse().unwrap_or(0));
        } else if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            len = BodyLen::Chunked;
        }
    }
    let mut parts = first.split_whitespace();
    let request = Request {
        method: parts.next().unwrap_or_default().to_string(),
        target: parts.next().unwrap_or_default().to_string(),
    };
    Ok(Some((head, request, len)))
}

/// Copies a body of `len` from `reader` to `out`.
fn read_body(reader: &mut impl BufRead, len: BodyLen, out: &mut impl Write) -> std::io::Result<()> {
    match len {
        BodyLen::Exactly(n) => {
            std::io::copy(&mut reader.take(n), out)?;
        }
        BodyLen::Chunked => loop {
            let mut size_line = Vec::new();
            reader.read_until(b'\n', &mut size_line)?;
            out.write_all(&size_line)?;
            let size = usize::from_str_radix(
                String::from_utf8_lossy(&size_line)
                    .trim()
                    .split(';')
                    .next()
                    .unwrap_or("0"),
                16,
            )
            .unwrap_or(0);
            std::io::copy(&mut reader.take(size as u64 + 2), out)?;
            if size == 0 {
                break;
            }
        },
    }
    Ok(())
}

/// A writer that counts what passes.
struct Counter<'a, W> {
    inner: &'a mut W,
    sent: &'a AtomicU64,
}

impl<W: Write> Write for Counter<'_, W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(data)?;
        self.sent.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
