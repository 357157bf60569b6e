"""Every code example in README.md and every page under docs/ (recursively) runs.

A page's fenced ```python blocks run in order in one namespace (a block may use what an
earlier block on the page defined), in a fresh working directory.  A block preceded by the
marker line ``<!-- doc-test: skip (why) -->`` is not run (for blocks that need a cluster or a
long run): it is compiled, and every name it reads must be defined by the page's earlier
blocks, by itself, or be a builtin.  In ```bash blocks every ``onlinemkl ...`` command is
parsed by the command line's own parser, so a renamed command or option fails here.
"""

from __future__ import annotations

import ast
import builtins
import os
import pathlib
import re
import shlex
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SKIP = re.compile(r"<!--\s*doc-test:\s*skip\b(.*?)-->")
FENCE = re.compile(r"^```(\w*)\s*$")


def blocks(page: pathlib.Path):
    """``(language, first line number, code, skip reason or None)`` of every fenced block of ``page``."""
    out = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        skip = SKIP.search(lines[k]) if k >= 0 else None
        out.append((m.group(1), i + 2, "\n".join(lines[i + 1:j]) + "\n",
                    skip.group(1).strip(" :()") or "no reason given" if skip else None))
        i = j + 1
    return out


def _ids(pages):
    return [p.relative_to(ROOT).as_posix() for p in pages]


def _names_read(tree) -> set:
    """The names a block reads that it does not bind itself (imports, assignments, defs, loops)."""
    bound, read = set(dir(builtins)), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, (ast.Store, ast.Del)) else read).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return read - bound


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_python_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # files the examples write land here
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    namespace = {"__name__": "__doc_example__"}
    name = page.relative_to(ROOT).as_posix()
    ran = 0
    try:
        for lang, line, code, skip in blocks(page):
            if lang != "python":
                continue
            where = f"{name}:{line}"
            tree = compile(code, where, "exec", ast.PyCF_ONLY_AST)
            if skip is not None:
                undefined = sorted(_names_read(tree) - set(namespace))
                assert not undefined, f"{where} (not run: {skip}) reads {undefined}, defined nowhere on the page"
                continue
            exec(compile(tree, where, "exec"), namespace)  # an exception names the page and the line
            ran += 1
    finally:  # a page that starts a server and fails before stopping it leaves no process behind
        for value in list(namespace.values()):
            if isinstance(value, subprocess.Popen) and value.poll() is None:
                value.kill()
                value.wait(timeout=30)
    if name == "README.md":
        assert ran >= 6


def _commands(code: str):
    """Every ``onlinemkl ...`` command of a shell block, as argument lists (pipes, ``&&``, comments,
    redirections and ``python -m pip``-style prefixes cut away)."""
    for text in code.replace("\\\n", " ").splitlines():
        text = text.split(" #")[0]
        for part in re.split(r"\|\||&&|\||;", text):
            words = shlex.split(part, comments=True)
            if not words or words[0] != "onlinemkl":
                continue
            args = []
            for w in words[1:]:
                if w in (">", "2>", ">>", "<") or re.match(r"^\d?>", w):
                    break
                args.append(w)
            yield args


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_shell_commands_parse(page):
    from onlinemkl.cli._args import build_parser

    parser = build_parser()
    name = page.relative_to(ROOT).as_posix()
    for lang, line, code, skip in blocks(page):
        if lang not in ("bash", "sh", "shell") or skip is not None:
            continue
        for args in _commands(code):
            try:
                parsed = parser.parse_args(args)
            except SystemExit as exc:
                if exc.code:  # 0: --help / --version
                    pytest.fail(f"{name}:{line}: `onlinemkl {' '.join(args)}` does not parse (exit {exc.code})")
                continue
            assert getattr(parsed, "func", None) is not None, f"{name}:{line}: `onlinemkl {' '.join(args)}`"


def test_pages_in_subfolders_of_docs_are_checked():
    assert any(p.parent != ROOT / "docs" and p.parent.is_relative_to(ROOT / "docs") for p in PAGES), (
        "no page in a subfolder of docs/ is collected")


def test_a_skipped_block_reading_an_undefined_name_is_reported(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```python\nx = 1\n```\n\n<!-- doc-test: skip (needs a cluster) -->\n"
                    "```python\nfrom math import sqrt\nprint(sqrt(x), learner)\n```\n")
    (first, second) = blocks(page)
    assert first[3] is None and second[3] == "needs a cluster" and second[1] == 7
    tree = compile(second[2], "page.md", "exec", ast.PyCF_ONLY_AST)
    assert _names_read(tree) - {"x"} == {"learner"}
    assert list(_commands("onlinemkl train data.csv --target y > out.txt  # note\nzcat a | onlinemkl info m")) == [
        ["train", "data.csv", "--target", "y"], ["info", "m"]]
