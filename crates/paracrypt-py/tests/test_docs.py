"""Every example of the README and of the user guide (docs/guide/) runs as a new user pastes it,
and every relative link of the documentation leads somewhere.

The examples: each page's ``sh`` and ``python`` blocks run in the order they appear, in one
empty directory per page (a page makes the files it uses, in a block the reader sees), ``sh``
with ``bash -e -u -o pipefail`` (the shell variables a block sets kept for the next, as in one
terminal), ``python`` as a script of its own (Dask's worker processes
import the script again, as they do a user's). On ``PATH``: the ``paracrypt`` the suite built,
and the Python of the suite's environment, where ``import paracrypt`` (and Dask) work as after
the guide's install. What the guide asks the reader to have is given, never faked: the
environment of a real S3 server on 127.0.0.1 (tests/s3/server.py, moto, with SigV4 checked) and
its buckets ``backups`` and ``restore`` and, for a page with ``awskms:`` recipients, the KMS key
``alias/backups`` (moto serves KMS on the same port), as ``aws`` users export theirs; Open MPI allowed to run
as root and to put more ranks than cores on this machine. ``rust`` blocks are compiled and run by
rustdoc (the facade crate includes each page that has them: checked below); other blocks
(``text``, ``json``) are output, not commands.

A block that cannot run here says why in an HTML comment on the line before it,
``<!-- not run: REASON -->``, with one of the reasons in ``NOT_RUN`` (building the release
binary, installing, hosts this machine does not have, a measurement that takes minutes); any
other reason fails the test.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Iterator

import pytest

from conftest import BINARY, ROOT

GUIDE = ROOT / "docs" / "guide"
PAGES = [ROOT / "README.md", *sorted(GUIDE.glob("*.md"))]

# Why a block may stay unrun: the suite does these itself, or cannot on one machine.
NOT_RUN = {
    "builds the release binary": "the suite builds and tests its own binary",
    "installs the package": "the suite builds the extension and imports it in place",
    "needs several hosts": "tests/cli/cluster.rs runs distributed jobs on an emulated cluster",
    "runs in a clone": "scripts/test.sh runs it from the repository",
    "a measurement of minutes": "performance is measured by hand on an idle machine, never in a test",
}

# The shell variables a block set, for the next block of the page (bash's own and the
# read-only ones left out).
SAVE_VARIABLES = (
    "for v in $(compgen -v); do case $v in BASH*|EUID|PPID|UID|SHELLOPTS|FUNCNAME|GROUPS|"
    "PIPESTATUS|RANDOM|SRANDOM|SECONDS|LINENO|EPOCH*|HIST*|COMP*|DIRSTACK|OPT*|PS?|PWD|OLDPWD|"
    "SHLVL|IFS|_) ;; *) declare -p \"$v\";; esac; done"
)
FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^\n`]*)\n(?P<code>.*?)^(?P=indent)```[ \t]*$",
                   re.S | re.M)
NOT_RUN_MARK = re.compile(r"<!-- not run: (?P<reason>[^>]*?) -->[ \t]*\n[ \t]*$")


def blocks(page: Path) -> Iterator[tuple[str, str, str | None, int]]:
    """(language, code, the reason it is not run or None, line) of each fenced block."""
    text = page.read_text()
    for match in FENCE.finditer(text):
        before = text[:match.start()]
        mark = NOT_RUN_MARK.search(before[-200:])
        language = (match["info"].strip().split(",")[0].split() or [""])[0]
        code = textwrap.dedent(match["code"])
        yield language, code, mark["reason"] if mark else None, before.count("\n") + 1


def runnable(page: Path) -> bool:
    return any(lang in ("sh", "python") and reason is None for lang, _, reason, _ in blocks(page))


@contextlib.contextmanager
def s3_server(kms: bool = False) -> Iterator[dict[str, str]]:
    """A real S3 server of a page's own, with the buckets the examples name (and, with `kms`,
    the KMS key ``alias/backups``): its environment."""
    python = ROOT / "target" / "s3-venv" / "bin" / "python"
    assert python.exists(), "the object-storage examples need moto's server (scripts/test.sh)"
    server = subprocess.Popen([str(python), str(ROOT / "tests" / "s3" / "server.py")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True,
                              env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    assert server.stdin is not None and server.stdout is not None
    ready = server.stdout.readline().split()
    assert ready[:1] == ["READY"], ready
    commands = [{"op": "bucket", "bucket": bucket} for bucket in ("backups", "restore")]
    if kms:
        commands.append({"op": "kms_key", "alias": "alias/backups"})
    for command in commands:
        server.stdin.write(json.dumps(command) + "\n")
        server.stdin.flush()
        assert json.loads(server.stdout.readline())["ok"]
    yield {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{ready[1]}", "AWS_ALLOW_HTTP": "true",
           "AWS_ACCESS_KEY_ID": ready[2], "AWS_SECRET_ACCESS_KEY": ready[3],
           "AWS_REGION": "us-east-1"}
    server.stdin.close()
    server.wait(timeout=30)


@pytest.mark.parametrize("page", [p for p in PAGES if runnable(p)], ids=lambda p: p.name)
def test_every_example_runs(page: Path, tmp_path: Path) -> None:
    with contextlib.ExitStack() as stack:
        text = page.read_text()
        kms = "awskms:" in text
        s3 = stack.enter_context(s3_server(kms)) if "s3://" in text or kms else {}
        run_examples(page, tmp_path, s3)


def run_examples(page: Path, tmp_path: Path, s3: dict[str, str]) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PARACRYPT_", "AWS_", "OMPI_"))}
    env.update(s3)
    env["PATH"] = os.pathsep.join([str(BINARY.parent), str(Path(sys.executable).parent),
                                   env.get("PATH", "")])
    env["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
    if os.geteuid() == 0:
        env["OMPI_ALLOW_RUN_AS_ROOT"] = env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    ran = 0
    shell_state = tmp_path.parent / f"{tmp_path.name}.variables"
    shell_state.write_text("")
    for n, (language, code, reason, line) in enumerate(blocks(page)):
        where = f"{page.relative_to(ROOT)}:{line}"
        if reason is not None:
            assert reason in NOT_RUN, f"{where}: unknown reason {reason!r} (one of {list(NOT_RUN)})"
            continue
        if language == "sh":
            # One terminal per page: what a block sets (`recipient=$(…)`) the next one has.
            script = f"source {shell_state}\n{code}\n{SAVE_VARIABLES} > {shell_state}\n"
            args = ["bash", "-e", "-u", "-o", "pipefail", "-c", script]
        elif language == "python":
            script = tmp_path / f".example{n}.py"
            script.write_text(code)
            args = [sys.executable, script.name]
        else:
            continue
        done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, (f"{where}: the example fails (exit {done.returncode}):\n"
                                      f"{code}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}")
        ran += 1
    assert ran, f"{page.name} has no example that runs"


def test_pages_with_rust_examples_are_doctested() -> None:
    """A page's ``rust`` blocks are compiled and run by ``cargo test --doc -p paracrypt``: the
    facade crate includes the page."""
    lib = (ROOT / "src" / "lib.rs").read_text()
    for page in PAGES:
        if any(lang == "rust" for lang, _, _, _ in blocks(page)):
            name = page.relative_to(ROOT).as_posix()
            assert f'include_str!("../{name}")' in lib, f"src/lib.rs does not doctest {name}"


def test_only_known_reasons_leave_an_example_unrun() -> None:
    unrun = [(page.name, line, reason) for page in PAGES
             for _, _, reason, line in blocks(page) if reason is not None]
    assert all(reason in NOT_RUN for _, _, reason in unrun), unrun


# ---------------------------------------------------------------------------------------------
# Links: every relative link and anchor of the documentation leads somewhere.

DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\((?P<target><[^>]+>|[^)\s]+)(?: \"[^\"]*\")?\)")


def prose(text: str) -> str:
    """The text without fenced blocks and inline code, where a link is not a link."""
    text = re.sub(r"^ *```.*?^ *```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for a Markdown page's headings (and explicit ``id``/``name`` ones)."""
    seen: dict[str, int] = {}
    found = set()
    text = re.sub(r"^ *```.*?^ *```", "", page.read_text(), flags=re.S | re.M)
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    found.update(re.findall(r"<a (?:name|id)=\"([^\"]+)\"", text))
    return found


def test_every_relative_link_and_anchor_exists() -> None:
    broken = []
    for page in DOCS:
        for match in LINK.finditer(prose(page.read_text())):
            target = match["target"].strip("<>")
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)


# ---------------------------------------------------------------------------------------------
# The guide and `--help` (from which the man pages are generated) say the same.

def test_the_exit_codes_of_help_are_the_guides() -> None:
    """``paracrypt --help`` ends with the exit codes; the guide's table has a row for each, and
    no code the help does not name."""
    help_text = subprocess.run([str(BINARY), "--help"], capture_output=True, text=True,
                               check=True).stdout
    # The paragraph, wrapped to the terminal's width: one line of words.
    line = help_text[help_text.index("Exit status:"):].split("\n\n")[0].replace("\n", " ")
    named = {int(code) for code in re.findall(r"(?<![+\d])(\d+) [a-z]", line)}
    assert "128+N interrupted by signal N" in line
    table = (GUIDE / "outputs.md").read_text()
    rows = re.findall(r"^\| ([\d, ]+) \|", table, flags=re.M)
    codes = {int(code) for row in rows for code in row.split(",")}
    assert named == {code for code in codes if code < 128}, (line, rows)
    assert {130, 143, 129} <= codes  # SIGINT, SIGTERM, SIGHUP: 128 + N
