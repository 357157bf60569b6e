"""The documentation site's contracts: the README's shape, the pages in the navigation, and the
build-time helpers (``docs/_hooks.py``, ``docs/_griffe_doctests.py``).

The helpers need the ``docs`` extra (mkdocs, griffe); their tests skip without it.
"""

from __future__ import annotations

import importlib.util
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _load(path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_is_short_and_keeps_the_ci_contract():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    first_bash = re.search(r"^```bash\n(.*?)^```", text, re.S | re.M).group(1).splitlines()
    assert "pytest" in first_bash[1], ".ci/run runs the second line of the README's first bash block"


def test_readme_links_point_at_existing_files():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = {t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t}
    missing = sorted(t for t in targets if t and not (ROOT / t).exists())
    assert not missing, f"README.md links to missing files: {missing}"


def test_every_page_under_docs_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r"([\w./-]+\.md)\s*$", nav, re.M))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert pages - listed == set(), f"pages missing from mkdocs.yml's nav: {sorted(pages - listed)}"
    assert listed - pages == set(), f"mkdocs.yml's nav names missing pages: {sorted(listed - pages)}"


def test_doctest_blocks_are_fenced_once():
    pytest.importorskip("griffe")
    fence = _load(DOCS / "_griffe_doctests.py").fence_doctests
    text = "A kernel.\n\n>>> Linear()\nLinear(group=None)\n\nMore text.\n\n```python\n>>> kept\n```"
    assert fence(text) == ("A kernel.\n\n```pycon\n>>> Linear()\nLinear(group=None)\n```\n\nMore text.\n\n"
                           "```python\n>>> kept\n```")
    indented = "    >>> 1 + 1\n    2"
    assert fence(indented) == "    ```pycon\n    >>> 1 + 1\n    2\n    ```"


def test_hooks_generate_the_command_line_help_and_include_results(tmp_path, monkeypatch):
    pytest.importorskip("mkdocs")
    hooks = _load(DOCS / "_hooks.py")
    cli = hooks._cli_help()
    for command in ("demo", "train", "evaluate", "predict", "serve", "info", "tune", "warmup"):
        assert f"## onlinemkl {command}\n" in cli
        assert f"usage: onlinemkl {command}" in cli

    (tmp_path / "b.md").write_text("# B title\n\ntext\n\n## part\n\n```\n# not a heading\n```\n")
    (tmp_path / "SUMMARY.md").write_text("# Summary\n")
    (tmp_path / "a.md").write_text("no title\n")
    monkeypatch.setattr(hooks, "RESULTS", tmp_path)
    page = hooks._all_results()
    assert page.index("## SUMMARY: Summary") < page.index("## a\n") < page.index("## b: B title")
    assert "### part" in page and "# not a heading" in page and "## # not" not in page
    assert "`benchmarks/results/b.md`" in page
    assert hooks._one_result("missing | b").startswith("`benchmarks/results/b.md`")
    assert "#### part" in hooks._one_result("b")
    assert "not in this build" in hooks._one_result("missing")
