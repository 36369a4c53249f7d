//! Reading objects: `info` and `--range` fetch only the header and the covering chunks (the
//! proxy counts every byte the server sends), a whole decryption reads the object once.

use super::{Action, Proxy, Server};
use crate::common::*;
use crate::container::keygen;

/// `info` on a 40 MiB object reads its header (one GET of 16 KiB at most) and a HEAD; a 4 KiB
/// `--range` reads the header and the one chunk that covers it — and the last chunk when the
/// range reaches the end; a whole decryption reads the object once.
#[test]
fn info_and_ranges_fetch_only_what_they_need() {
    let server = Server::shared();
    let bucket = server.bucket("ranges");
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let plain = data(40 << 20, 5);
    let input = write(d, "in", &plain);
    let object = bucket.url("big.pcr");
    let mut c = server.client();
    c.args(["encrypt", "-q", "--key-file"])
        .arg(&key)
        .args(["-o", &object])
        .arg(&input);
    ok(run(c));
    let size = bucket.get("big.pcr").len() as u64;
    let chunk = (1 << 20) + 16;
    // What answers cost besides their bodies: heads of a few hundred bytes each.
    let overhead = 4096;

    let proxy = Proxy::start(server.port, |_| Action::Forward);
    let mut c = server.client_at(&proxy.url());
    c.args(["info", &object]);
    let out = String::from_utf8(ok(run(c))).unwrap();
    assert!(out.contains("plaintext:   41943040 bytes"), "{out}");
    assert!(
        proxy.sent() <= (16 << 10) + overhead,
        "info read {} bytes",
        proxy.sent()
    );

    for (offset, len, chunks) in [
        (5 << 20, 4096u64, 1u64),
        ((3 << 20) - 100, 4096, 2),
        ((40 << 20) - 4096, 4096, 1),
    ] {
        let proxy = Proxy::start(server.port, |_| Action::Forward);
        let mut c = server.client_at(&proxy.url());
        c.args(["decrypt", "--key-file"]).arg(&key).args([
            "--range",
            &format!("{offset}:{len}"),
            &object,
        ]);
        let out = ok(run(c));
        assert!(out == plain[offset as usize..(offset + len) as usize]);
        let limit = (16 << 10) + chunks * chunk + overhead;
        assert!(
            proxy.sent() <= limit,
            "--range {offset}:{len} read {} bytes, more than the header and {chunks} chunk(s) ({limit})",
            proxy.sent()
        );
    }
    // `OFFSET:` to the end: the object's length says where that is, nothing before OFFSET is
    // read.
    let proxy = Proxy::start(server.port, |_| Action::Forward);
    let mut c = server.client_at(&proxy.url());
    c.args(["decrypt", "--key-file"])
        .arg(&key)
        .args(["--range", "38MiB:", &object]);
    let out = ok(run(c));
    assert!(out == plain[38 << 20..]);
    let limit = (16 << 10) + 3 * chunk + overhead;
    assert!(
        proxy.sent() <= limit,
        "--range 38MiB: read {} bytes, more than the header and 3 chunks ({limit})",
        proxy.sent()
    );

    let proxy = Proxy::start(server.port, |_| Action::Forward);
    let mut c = server.client_at(&proxy.url());
    c.args(["decrypt", "--key-file"])
        .arg(&key)
        .args(["-o"])
        .arg(d.join("back"))
        .arg(&object);
    ok(run(c));
    assert!(std::fs::read(d.join("back")).unwrap() == plain);
    let extra = proxy.sent().saturating_sub(size);
    assert!(
        extra < (16 << 10) + 64 * 1024,
        "a decryption read the {size}-byte object and {extra} more bytes"
    );
    bucket.holds_only(&["big.pcr"]);
}
