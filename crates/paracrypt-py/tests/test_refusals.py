"""The refusal table (tests/refusals/table.json: read its "about") through every front door of
the Python package: decrypt_file, decrypt, decrypt_into, decryptor, decrypt_range, the raw
functions, and paracrypt.dask on a LocalCluster. Each door must give each row's outcome: its
exception class, the row's words in the message, nothing left at dst, the plaintext on success.
The table's `trees` rows go through the doors that open a tree: decrypt_tree, verify_tree,
rekey_tree and paracrypt.dask.decrypt_tree; its `signed-trees` rows through
verify_tree(signature=).
The CLI runs the same table (crates/paracrypt-cli/tests/cli/refusals.rs)."""

from __future__ import annotations

import io
import json
import os
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import pytest
from conftest import BINARY, ROOT, listing
from distributed import Client, LocalCluster

import paracrypt
import paracrypt.dask
import paracrypt.raw

TABLE_DIR = ROOT / "tests" / "refusals"
TABLE = json.loads((TABLE_DIR / "table.json").read_text())
FILES = TABLE_DIR / "files"
PLAIN = (FILES / TABLE["plaintext"]).read_bytes()


def rows() -> list[Any]:
    return [pytest.param(row, id=f"{row['input']} with {row['request']}") for row in TABLE["rows"]]


def secrets(request: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of a decryption's request."""
    kwargs: dict[str, Any] = {}
    for field in ("key", "identities", "verify_with"):
        if field in request:
            kwargs[field] = str(FILES / request[field])
    if "password" in request:
        kwargs["password"] = (FILES / request["password"]).read_text().splitlines()[0]
    return kwargs


@pytest.fixture(autouse=True)
def plugin_env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test plugin first on PATH (it is built beside the CLI), then the row's `env`: the
    plugin runs in this process (Dask's client opens the header)."""
    monkeypatch.setenv("PATH", f"{BINARY.parent}{os.pathsep}{os.environ['PATH']}")
    for switch in ("PCTEST_FAIL", "PCTEST_LOG", "PARACRYPT_PLUGIN_SECRET"):
        monkeypatch.delenv(switch, raising=False)
    row = request.node.callspec.params.get("row") if hasattr(request.node, "callspec") else None
    if row is not None and "signature" not in row:  # (a signed tree's row has no env)
        for name, value in TABLE["requests"][row["request"]].get("env", {}).items():
            monkeypatch.setenv(name, value)


def raw_arguments(raw: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of a raw cipher's request."""
    kwargs: dict[str, Any] = {"cipher": raw["cipher"]}
    if "key" in raw:
        kwargs.update(key=bytes.fromhex(raw["key"]), iv=bytes.fromhex(raw["iv"]))
    else:
        kwargs["password"] = (FILES / raw["password"]).read_text().splitlines()[0]
    return kwargs


def expected(row: dict[str, Any], positional: bool) -> tuple[str, Optional[str]]:
    """The outcome and words a door gives: a door that needs positions refuses armor (`usage`)
    where nothing refuses the row first."""
    if row["outcome"] == "ok" and row.get("in_order") and positional:
        return "usage", "armor"
    return row["outcome"], row.get("says")


def check(row: dict[str, Any], door: str, run: Callable[[], Optional[bytes]], tmp: Path,
          positional: bool = False) -> None:
    """Runs one door; checks the outcome, and that a refusal left nothing in `tmp`."""
    outcome, says = expected(row, positional)
    before = listing(tmp)
    at = f"{row['input']} with {row['request']} through {door}"
    if outcome == "ok":
        got = run()
        if got is not None:
            assert got == PLAIN, f"{at}: not the plaintext"
        return
    exception = getattr(paracrypt, TABLE["outcomes"][outcome]["python"])
    with pytest.raises(paracrypt.Error) as raised:
        run()
    assert type(raised.value) is exception or isinstance(raised.value, exception), \
        f"{at}: {type(raised.value).__name__}: {raised.value}"
    assert says and says in str(raised.value), f"{at}: should say `{says}`: {raised.value}"
    assert listing(tmp) == before, f"{at}: a refusal left a file"


def doors(row: dict[str, Any], tmp: Path) -> Iterator[tuple[str, Callable[[], Optional[bytes]], bool]]:
    """Every door of this process for `row`: (name, run, needs positions)."""
    src = FILES / row["input"]
    request = TABLE["requests"][row["request"]]
    data = src.read_bytes()
    dst = tmp / "out"

    def to_file(function: Callable[..., Any], **kwargs: Any) -> Callable[[], bytes]:
        def go() -> bytes:
            function(src, dst, overwrite=True, **kwargs)
            return dst.read_bytes()
        return go

    def streamed(opener: Callable[..., Any], **kwargs: Any) -> Callable[[], bytes]:
        def go() -> bytes:
            with opener(io.BytesIO(data), **kwargs) as reader:
                return bytes(reader.read())
        return go

    if "raw" in request:
        kwargs = raw_arguments(request["raw"])
        yield "raw.decrypt_file", to_file(paracrypt.raw.decrypt_file, **kwargs), False
        yield "raw.decrypt", lambda: bytes(paracrypt.raw.decrypt(data, **kwargs)), False
        yield "raw.decryptor", streamed(paracrypt.raw.decryptor, **kwargs), False
        return
    kwargs = secrets(request)

    def into() -> bytes:
        out = bytearray(len(data) + 64)
        n = paracrypt.decrypt_into(data, out, **kwargs)
        return bytes(out[:n])

    yield "decrypt_file", to_file(paracrypt.decrypt_file, **kwargs), False
    yield "decrypt", lambda: bytes(paracrypt.decrypt(data, **kwargs)), False
    yield "decryptor", streamed(paracrypt.decryptor, **kwargs), False
    yield "decrypt_into", into, True
    yield "decrypt_range", lambda: bytes(paracrypt.decrypt_range(src, 0, len(PLAIN), **kwargs)), True


@pytest.mark.parametrize("row", rows())
def test_every_door_of_the_package(row: dict[str, Any], tmp_path: Path) -> None:
    for door, run, positional in doors(row, tmp_path):
        (tmp_path / "out").unlink(missing_ok=True)
        with warnings.catch_warnings():
            # Raw ciphers warn that they have no integrity: not what this table checks.
            warnings.simplefilter("ignore", paracrypt.LegacyWarning)
            check(row, door, run, tmp_path, positional)


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0",
                      worker_dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
        yield client


@pytest.mark.parametrize("row", [row for row in rows()
                                 if "raw" not in TABLE["requests"][row.values[0]["request"]]])
def test_every_row_through_dask(row: dict[str, Any], tmp_path: Path, client: Client) -> None:
    """paracrypt.dask (DistributedJob: the header checked on the client, the chunks in tasks)
    refuses what every other door refuses, in the same words. It runs no raw cipher."""
    kwargs = secrets(TABLE["requests"][row["request"]])
    dst = tmp_path / "out"

    def go() -> bytes:
        with warnings.catch_warnings():
            # On loopback nothing travels in clear: no InsecureTransportWarning.
            warnings.simplefilter("error", paracrypt.InsecureTransportWarning)
            paracrypt.dask.decrypt_file(client, FILES / row["input"], dst, **kwargs)
        return dst.read_bytes()

    check(row, "paracrypt.dask", go, tmp_path, positional=True)


TREES = TABLE_DIR / "trees"


def tree_rows() -> list[Any]:
    return [pytest.param(row, id=f"{row['input']} with {row['request']}")
            for row in TABLE["trees"]["rows"]]


def files_under(top: Path) -> dict[str, bytes]:
    """Every regular file under `top`, by its path under `top`, with its bytes."""
    return {str(path.relative_to(top)): path.read_bytes()
            for path in sorted(top.rglob("*")) if path.is_file() and not path.is_symlink()}


def check_tree(row: dict[str, Any], door: str, run: Callable[[], None], dst: Optional[Path],
               kind: str = "decrypt", back: Optional[Callable[[], Path]] = None) -> None:
    """Runs one tree door (`kind`: decrypt, verify or rekey): its outcome (a refusal of the whole
    tree leaves no dst; a tree decrypted in part leaves only complete files, each its
    plaintext; a rekeyed tree, decrypted by `back`, is the plaintext tree), and the row's
    words."""
    at = f"{row['input']} with {row['request']} through {door}"
    plain = files_under(TREES / TABLE["trees"]["plaintext"])
    outcome, says = row["outcome"], row.get("says")
    if kind == "rekey" and "rekey" in row:
        outcome, says = row["rekey"]["outcome"], row["rekey"]["says"]
    if outcome == "ok":
        run()
        if back is not None:
            dst = back()
        if dst is not None:
            assert files_under(dst) == plain, f"{at}: not the plaintext tree"
        return
    if outcome == "files-refused":
        name = TABLE["trees"]["outcomes"]["files-refused"][kind]["python"]
    elif outcome in TABLE["trees"]["outcomes"]:
        name = TABLE["trees"]["outcomes"][outcome]["python"]
    else:
        name = TABLE["outcomes"][outcome]["python"]
    exception = getattr(paracrypt, name)
    with pytest.raises(paracrypt.Error) as raised:
        run()
    assert type(raised.value) is exception, f"{at}: {type(raised.value).__name__}: {raised.value}"
    # A changed tree's message names its first difference; `changes` lists every one.
    said = "\n".join([str(raised.value), *getattr(raised.value, "changes", [])])
    says = says if isinstance(says, list) else [says]
    for words in says:
        assert words in said, f"{at}: should say `{words}`: {said}"
    if dst is None:
        return
    if outcome != "files-refused" or kind == "rekey":
        assert not dst.exists(), f"{at}: a refusal left dst"
        return
    got = files_under(dst)
    assert got and len(got) < len(plain), f"{at}: {sorted(got)}"
    for path, data in got.items():
        assert plain.get(path) == data, f"{at}: {path} is not its plaintext"


@pytest.mark.parametrize("row", tree_rows())
def test_every_tree_door_of_the_package(row: dict[str, Any], tmp_path: Path) -> None:
    src = TREES / row["input"]
    kwargs = secrets(TABLE["requests"][row["request"]])
    dst = tmp_path / "out"
    check_tree(row, "decrypt_tree", lambda: paracrypt.decrypt_tree(src, dst, **kwargs), dst)
    check_tree(row, "verify_tree", lambda: paracrypt.verify_tree(src, **kwargs), None, "verify")


def rekey_rows() -> list[Any]:
    """The tree rows the rekey doors run: a request with `key` or `verify_with` has none."""
    return [row for row in tree_rows()
            if not {"key", "verify_with"} & TABLE["requests"][row.values[0]["request"]].keys()]


@pytest.mark.parametrize("row", rekey_rows())
def test_every_tree_row_through_rekey_tree(row: dict[str, Any], tmp_path: Path) -> None:
    """rekey_tree, to the request's kind of secret (the table's `about`: a request with `key`
    or `verify_with` has no rekey door), refuses what the other tree doors refuse, in the same
    words; a tree that differs from its manifest is refused whole, and a rekeyed tree opens
    with the request to the plaintext tree."""
    src = TREES / row["input"]
    kwargs = secrets(TABLE["requests"][row["request"]])
    if "password" in kwargs:
        to = {"new_password": kwargs["password"]}
    else:
        to = {"recipients": (FILES / "recipient.txt").read_text().split()}
    dst = tmp_path / "rekeyed"

    def back() -> Path:
        opened = tmp_path / "back"
        paracrypt.decrypt_tree(dst, opened, **kwargs)
        return opened

    check_tree(row, "rekey_tree", lambda: paracrypt.rekey_tree(src, dst, **kwargs, **to), dst,
               "rekey", back)


@pytest.mark.parametrize("row", tree_rows())
def test_every_tree_row_through_dask(row: dict[str, Any], tmp_path: Path, client: Client) -> None:
    """paracrypt.dask.decrypt_tree (the manifest and each header opened on the client, the
    files in tasks) refuses what the other tree doors refuse, in the same words."""
    src = TREES / row["input"]
    kwargs = secrets(TABLE["requests"][row["request"]])
    dst = tmp_path / "out"
    check_tree(row, "paracrypt.dask.decrypt_tree",
               lambda: paracrypt.dask.decrypt_tree(client, src, dst, **kwargs), dst)


SIGNED = TABLE_DIR / "signed-trees"
SIGNED_TABLE = TABLE["signed-trees"]


@pytest.mark.parametrize("row", [
    pytest.param(row, id=f"{row['input']} against {row['signature']} {row['request']}")
    for row in SIGNED_TABLE["rows"]])
def test_every_signed_tree_row_through_verify_tree(row: dict[str, Any]) -> None:
    """verify_tree(signature=) gives each row of the `signed-trees` section its outcome: the
    exception class, and the row's words in the message or in `changes`."""
    at = f"{row['input']} against {row['signature']} {row['request']}"
    kwargs: dict[str, Any] = {}
    if "verify_with" in SIGNED_TABLE["requests"][row["request"]]:
        kwargs["verify_with"] = FILES / SIGNED_TABLE["requests"][row["request"]]["verify_with"]

    def run() -> dict[str, Any]:
        return paracrypt.verify_tree(SIGNED / row["input"], signature=SIGNED / row["signature"],
                                     **kwargs)

    if row["outcome"] == "ok":
        done = run()
        assert done["signer"]["required"] == ("verify_with" in kwargs), f"{at}: {done}"
        return
    classes = {**TABLE["outcomes"], **SIGNED_TABLE["outcomes"]}
    exception = getattr(paracrypt, classes[row["outcome"]]["python"])
    with pytest.raises(paracrypt.Error) as raised:
        run()
    assert type(raised.value) is exception, f"{at}: {type(raised.value).__name__}: {raised.value}"
    said = "\n".join([str(raised.value), *getattr(raised.value, "changes", [])])
    says = row["says"] if isinstance(row["says"], list) else [row["says"]]
    for words in says:
        assert words in said, f"{at}: should say `{words}`: {said}"
