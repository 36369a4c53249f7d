"""The KMS server of the key-state tests: ministack's AWS KMS, on 127.0.0.1.

moto (tests/s3/server.py, the server of every other KMS test) encrypts and decrypts with a
disabled key and with a key pending deletion alike: it never looks at a key's state. ministack
(1.5.33, PyPI, pure Python) refuses both as AWS does (`DisabledException`,
`KMSInvalidStateException`, the key's ARN in the message), so the tests of those two refusals
run against it. It does not check signatures, and its ciphertext is opaque to the tests.

Started by the tests (crates/paracrypt-cli/tests/cli/kms.rs): it starts ministack on a free
port as a child process (which the kernel stops if this process dies first), prints

    READY <port>

and serves until its standard input closes, which happens when the test process ends however it
ends. Meanwhile each line on its standard input is a JSON command, answered by one JSON line on
its standard output, done with botocore through the server (what a test sets up, never what it
tests): make a key, disable it, schedule its deletion.
"""

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import botocore.session


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent() -> None:
    # PR_SET_PDEATHSIG: the server gets SIGTERM when this process ends, however it ends.
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


def main() -> None:
    port = free_port()
    env = dict(os.environ, BIND_HOST="127.0.0.1", GATEWAY_PORT=str(port), SERVICES="kms")
    server = subprocess.Popen(
        [sys.executable, "-m", "ministack"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=die_with_parent,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/_ministack/health", timeout=1).read()
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                print(f"FAILED ministack did not start (exit {server.poll()})", flush=True)
                server.kill()
                return
            time.sleep(0.05)
    kms = botocore.session.get_session().create_client(
        "kms",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    print(f"READY {port}", flush=True)
    for line in sys.stdin:
        try:
            result = command(kms, json.loads(line))
            print(json.dumps({"ok": True, "result": result}), flush=True)
        except Exception as e:  # noqa: BLE001 - the test reads the message
            print(json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"}), flush=True)
    server.terminate()
    server.wait(timeout=10)


def command(kms, cmd: dict):
    op = cmd["op"]
    if op == "key":
        meta = kms.create_key()["KeyMetadata"]
        return {"arn": meta["Arn"], "id": meta["KeyId"]}
    if op == "disable":
        kms.disable_key(KeyId=cmd["id"])
        return None
    if op == "delete":
        kms.schedule_key_deletion(KeyId=cmd["id"], PendingWindowInDays=7)
        return None
    raise ValueError(f"unknown op {op}")


if __name__ == "__main__":
    main()
