#!/usr/bin/env python3
"""Object storage benchmark (issue #27 item 6): ratios taken in one run against a local S3 server.

    target/s3-venv/bin/python scripts/s3-bench.py [--size-mib 1024] [--runs 3] [--debug]

(scripts/test.sh makes target/s3-venv; this script builds the release binaries it needs.)
It starts moto's server (tests/s3/server.py) on 127.0.0.1 with a byte-counting relay in front,
writes a SIZE file of random bytes, and measures, in alternating order, `runs` times each:

  - paracrypt encrypt FILE -o s3://…      (sealed on every core, uploaded in parts)
  - the plaintext uploaded by the same uploader (paracrypt-store's `upload` example: the same
    object_store client, 8 MiB parts, the same concurrency), no encryption
  - rclone copyto FILE crypt:…            (Debian's rclone, a `crypt` remote over the same server)

then reports medians and the ratios, the bytes the server sent for a 4 KiB `--range` in the
middle of the object (and for `info`), and the peak RSS of paracrypt during the upload.
On a shared machine the figures are preliminary: rerun in a quiet window.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


class Relay:
    """A TCP relay to the server that counts the bytes the server sends."""

    def __init__(self, upstream: int):
        self.upstream = upstream
        self.sent = 0
        self.lock = threading.Lock()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            client, _ = self.listener.accept()
            server = socket.create_connection(("127.0.0.1", self.upstream))
            threading.Thread(target=self.pipe, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self.pipe, args=(server, client, True), daemon=True).start()

    def pipe(self, src, dst, count):
        try:
            while data := src.recv(1 << 16):
                dst.sendall(data)
                if count:
                    with self.lock:
                        self.sent += len(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def reset(self) -> int:
        with self.lock:
            sent, self.sent = self.sent, 0
        return sent


def timed(cmd, env):
    """Runs cmd; returns (seconds, peak RSS in KiB)."""
    start = time.monotonic()
    child = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.monotonic() - start
    err = child.stderr.read().decode()
    if status != 0:
        sys.exit(f"{' '.join(cmd)} failed: {err}")
    return elapsed, usage.ru_maxrss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--debug", action="store_true",
                        help="the debug build (its dependencies and the core are optimised too)")
    args = parser.parse_args()

    profile = [] if args.debug else ["--release"]
    # One build of both, so that the core is built with one set of features.
    subprocess.run(
        ["cargo", "build", "--quiet", *profile, "-p", "paracrypt-cli", "-p", "paracrypt-store",
         "--bins", "--example", "upload"],
        cwd=ROOT, check=True,
    )
    built = os.path.join(ROOT, "target", "debug" if args.debug else "release")
    paracrypt = os.path.join(built, "paracrypt")
    upload = os.path.join(built, "examples/upload")

    server = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "tests/s3/server.py")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        _, port, key, secret = server.stdout.readline().split()

        def command(**cmd):
            server.stdin.write(json.dumps(cmd) + "\n")
            server.stdin.flush()
            answer = json.loads(server.stdout.readline())
            assert answer["ok"], answer
            return answer["result"]

        command(op="bucket", bucket="bench")
        relay = Relay(int(port))
        endpoint = f"http://127.0.0.1:{relay.port}"
        env = dict(os.environ)
        # Nothing of this machine's AWS settings: a CA bundle makes rclone's SDK refuse its own
        # HTTP transport (LoadCustomCABundleError), and the server is plain HTTP anyway.
        for var in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_CA_BUNDLE"):
            env.pop(var, None)
        env.update(
            AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret, AWS_REGION="us-east-1",
            AWS_ENDPOINT_URL=endpoint, AWS_ALLOW_HTTP="true",
            # rclone: an s3 remote on the same server and a crypt remote over it.
            RCLONE_CONFIG_S3_TYPE="s3", RCLONE_CONFIG_S3_PROVIDER="Other",
            RCLONE_CONFIG_S3_ACCESS_KEY_ID=key, RCLONE_CONFIG_S3_SECRET_ACCESS_KEY=secret,
            RCLONE_CONFIG_S3_ENDPOINT=endpoint, RCLONE_CONFIG_S3_REGION="us-east-1",
            RCLONE_CONFIG_S3_ENV_AUTH="false",
            RCLONE_CONFIG_CRYPT_TYPE="crypt", RCLONE_CONFIG_CRYPT_REMOTE="s3:bench/rclone",
            RCLONE_CONFIG_CRYPT_FILENAME_ENCRYPTION="off",
            RCLONE_CONFIG_CRYPT_DIRECTORY_NAME_ENCRYPTION="false",
        )
        env["RCLONE_CONFIG_CRYPT_PASSWORD"] = subprocess.run(
            ["rclone", "obscure", "a benchmark password"], capture_output=True, text=True,
            check=True,
        ).stdout.strip()

        with tempfile.TemporaryDirectory(prefix="paracrypt-s3-bench-") as tmp:
            data = os.path.join(tmp, "data")
            with open(data, "wb") as f:
                for _ in range(args.size_mib):
                    f.write(os.urandom(1 << 20))
            keyfile = os.path.join(tmp, "key")
            subprocess.run([paracrypt, "keygen", "-o", keyfile], check=True,
                           stderr=subprocess.DEVNULL)
            def jobs(run):
                # A fresh key per run: rclone skips or trips over an object it already wrote.
                return {
                    "paracrypt encrypt": [paracrypt, "encrypt", "-q", "-k", keyfile, data,
                                          "-o", f"s3://bench/p{run}.pcr"],
                    "plaintext upload": [upload, data, f"s3://bench/plain{run}"],
                    "rclone crypt": ["rclone", "copyto", "--s3-upload-concurrency", "8",
                                     "--s3-chunk-size", "8M", data, f"crypt:r{run}"],
                }

            times = {name: [] for name in jobs(0)}
            rss = []
            for run in range(args.runs):
                for name, cmd in jobs(run).items():
                    seconds, peak = timed(cmd, env)
                    times[name].append(seconds)
                    if name == "paracrypt encrypt":
                        rss.append(peak)
                    print(f"run {run + 1}: {name}: {seconds:.2f} s", file=sys.stderr)
                    # Free the server's memory (moto keeps objects in memory).
                    command(op="delete", bucket="bench", prefix="")
            med = {name: statistics.median(t) for name, t in times.items()}

            subprocess.run([paracrypt, "encrypt", "-q", "-k", keyfile, data, "-o",
                            "s3://bench/range.pcr"], env=env, check=True)
            relay.reset()
            middle = (args.size_mib << 20) // 2
            out = subprocess.run(
                [paracrypt, "decrypt", "-k", keyfile, "--range", f"{middle}:4096",
                 "s3://bench/range.pcr"], env=env, capture_output=True, check=True,
            ).stdout
            with open(data, "rb") as f:
                f.seek(middle)
                assert out == f.read(4096), "the range decrypted to other bytes"
            range_bytes = relay.reset()
            subprocess.run([paracrypt, "info", "s3://bench/range.pcr"], env=env,
                           capture_output=True, check=True)
            info_bytes = relay.reset()

        size = args.size_mib
        print(f"\n{size} MiB, medians of {args.runs} alternating runs, moto on 127.0.0.1, "
              f"{os.cpu_count()} cores, {'debug' if args.debug else 'release'} build:")
        print("| job | time | MiB/s | paracrypt's speed relative to it |")
        print("|---|---|---|---|")
        for name, t in med.items():
            ratio = t / med["paracrypt encrypt"]
            print(f"| {name} | {t:.2f} s | {size / t:.0f} | {ratio:.2f}× |")
        chunk = (1 << 20) + 16
        print(f"\n4 KiB --range from the middle: {range_bytes} bytes from the server "
              f"({range_bytes / chunk:.2f} chunks of {chunk} B); info: {info_bytes} bytes")
        print(f"peak RSS of paracrypt encrypt -o s3:// ({size} MiB): "
              f"{statistics.median(rss) / 1024:.0f} MiB (median; max {max(rss) / 1024:.0f} MiB)")
    finally:
        server.stdin.close()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
