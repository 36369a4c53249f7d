"""The typed signature of each public function, from the stub (python/paracrypt/_paracrypt.pyi),
as the first lines of its docstring, so that ``help()`` shows the types.

CPython's ``inspect`` refuses a ``__text_signature__`` that carries annotations ("Annotations
are not currently supported"), so ``help()`` would lose the signature altogether: the compiled
functions keep PyO3's plain text signature, and their docstrings open with the typed one. The
stub stays the one source of the types: ``python tools/typed_docs.py`` (from crates/paracrypt-py)
rewrites those lines in the Rust sources after the stub changes, and tests/test_typed_docs.py
fails when a docstring and the stub disagree."""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
STUB = HERE / "python" / "paracrypt" / "_paracrypt.pyi"
SOURCES = sorted((HERE / "src").glob("*.rs"))
WIDTH = 92


def _aliases(tree: ast.Module) -> dict[str, ast.expr]:
    return {
        node.targets[0].id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id.startswith("_")
    }


def _show(node: ast.expr, aliases: dict[str, ast.expr]) -> str:
    """An annotation as a reader writes it: ``A | B``, ``X | None``, the private aliases
    spelled out, string forward references unquoted."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if node.value.startswith("os.") or node.value.isidentifier():
            return node.value
        return _show(ast.parse(node.value, mode="eval").body, aliases)
    if isinstance(node, ast.Constant):
        return repr(node.value)
    if isinstance(node, ast.Name):
        if node.id in aliases:
            return _show(aliases[node.id], aliases)
        return node.id
    if isinstance(node, ast.Attribute):
        return ast.unparse(node)
    if isinstance(node, ast.Subscript):
        head = ast.unparse(node.value)
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Union":
            return " | ".join(_show(item, aliases) for item in items)
        if head == "Optional":
            return f"{_show(items[0], aliases)} | None"
        if head == "Literal":
            return " | ".join(repr(item.value) for item in items)  # type: ignore[attr-defined]
        return f"{head}[{', '.join(_show(item, aliases) for item in items)}]"
    if isinstance(node, ast.List):
        return "[" + ", ".join(_show(item, aliases) for item in node.elts) + "]"
    return ast.unparse(node)


def _signature(fn: ast.FunctionDef, aliases: dict[str, ast.expr]) -> str:
    args = fn.args
    parts: list[str] = []
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for i, (arg, default) in enumerate(zip(positional, defaults)):
        parts.append(_param(arg, default, aliases))
        if args.posonlyargs and i == len(args.posonlyargs) - 1:
            parts.append("/")
    if args.vararg:
        parts.append("*" + _param(args.vararg, None, aliases))
    elif args.kwonlyargs:
        parts.append("*")
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        parts.append(_param(arg, default, aliases))
    returns = f" -> {_show(fn.returns, aliases)}" if fn.returns else ""
    return f"{fn.name}({', '.join(parts)}){returns}"


def _param(arg: ast.arg, default: ast.expr | None, aliases: dict[str, ast.expr]) -> str:
    text = arg.arg
    if arg.annotation is not None:
        text += f": {_show(arg.annotation, aliases)}"
    if default is not None:
        text += f" = {ast.unparse(default)}"
    return text


def signatures() -> dict[str, list[str]]:
    """Each public module-level function of the stub → its typed signature: one parameter a
    line (a long one wrapped), as black lays out a long ``def``."""
    tree = ast.parse(STUB.read_text())
    aliases = _aliases(tree)
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            out[node.name] = _layout(node, aliases)
    return out


def _layout(fn: ast.FunctionDef, aliases: dict[str, ast.expr]) -> list[str]:
    one = _signature(fn, aliases)
    if len(one) <= WIDTH:
        return [one]
    inner = one[len(fn.name) + 1 : one.rindex(")")]
    tail = one[one.rindex(")") :]
    lines = [f"{fn.name}("]
    for part in _split(inner):
        lines.extend(
            textwrap.wrap(
                part + ",", WIDTH, initial_indent="    ", subsequent_indent="        ",
                break_long_words=False, break_on_hyphens=False,
            )
        )
    lines.append(tail)
    return lines


def _split(params: str) -> list[str]:
    """The top-level comma-separated parts of a parameter list."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(params):
        if c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(params[start:i].strip())
            start = i + 1
    parts.append(params[start:].strip())
    return [p for p in parts if p]


def rewrite() -> list[str]:
    """Rewrites the typed lines in the Rust sources; returns the functions not found."""
    wanted = signatures()
    found: set[str] = set()
    for source in SOURCES:
        lines = source.read_text().splitlines(keepends=True)
        out: list[str] = []
        i = 0
        while i < len(lines):
            line = lines[i]
            # A function's docs: a run of `///` lines (or a `#[doc = concat!(` of a macro's
            # function, whose typed lines come in as the macro's `$typed` argument), then
            # attributes, then `fn NAME`.
            if line.lstrip().startswith("///") and (name := _documented(lines, i)) in wanted:
                indent = line[: len(line) - len(line.lstrip())]
                # Drop typed lines written before (they start with `/// NAME(`).
                j = i
                if lines[j].strip().startswith(f"/// {name}("):
                    while not lines[j].strip() == "///":
                        j += 1
                    j += 1
                for typed in wanted[name]:
                    out.append(f"{indent}/// {typed}\n".replace("///     ", "///     "))
                out.append(f"{indent}///\n")
                found.add(name)
                while j < len(lines) and lines[j].lstrip().startswith("///"):
                    out.append(lines[j])
                    j += 1
                i = j
                continue
            out.append(line)
            i += 1
        source.write_text("".join(out))
    # The raw ``openssl enc`` functions are made by macros (api.rs `raw_functions!`,
    # `raw_streams!`), whose docs open with `include_str!("typed/NAME.txt")`: written here.
    typed = HERE / "src" / "typed"
    typed.mkdir(exist_ok=True)
    for name in sorted(set(wanted) - found):
        if name.startswith("raw_"):
            (typed / f"{name}.txt").write_text("\n".join(wanted[name]) + "\n")
            found.add(name)
    return sorted(set(wanted) - found)


def _documented(lines: list[str], i: int) -> str | None:
    """The function the doc comment starting at line ``i`` documents, when it is a
    ``#[pyfunction]`` (and the comment starts there: the line before is no doc line)."""
    if i > 0 and lines[i - 1].lstrip().startswith("///"):
        return None
    j = i
    while j < len(lines) and lines[j].lstrip().startswith("///"):
        j += 1
    attributes = []
    while j < len(lines) and lines[j].lstrip().startswith("#["):
        attributes.append(lines[j])
        j += 1
    if not any("#[pyfunction" in a for a in attributes) or j >= len(lines):
        return None
    match = re.search(r"\bfn ([a-z_0-9]+)", lines[j])
    return match.group(1) if match else None


if __name__ == "__main__":
    missing = rewrite()
    for name in missing:
        print(f"no Rust docs found for {name} (write its typed lines by hand)", file=sys.stderr)
    sys.exit(1 if missing else 0)
