"""MkDocs hooks: pages whose content is generated at build time.

* ``<!-- cli-help -->`` becomes ``onlinemkl --help`` and every subcommand's help text, from the
  command line's own parser, so the page cannot drift from the code.
* ``<!-- benchmark-results -->`` becomes every ``benchmarks/results/*.md`` present at build time,
  one section each, headed by the file's name and title (its headings demoted one level), in
  file-name order with SUMMARY.md first.
* ``<!-- results: NAME | OTHER -->`` becomes the first of ``benchmarks/results/NAME.md``,
  ``OTHER.md`` ... that exists (headings demoted), or a sentence saying how to produce it.
* ``<!-- results-figures: PREFIX -->`` becomes every ``benchmarks/results/PREFIX*.png``, which
  are copied into the site under ``figures/``.

The docstrings are numpydoc with Sphinx roles (``:func:`name```), which mkdocstrings renders
literally; the rendered pages keep the name as code and drop the role.
"""

from __future__ import annotations

import os
import pathlib
import re
import sys

from mkdocs.structure.files import File

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
FIGURES = "figures"  # where the result figures land in the site

CLI = re.compile(r"<!--\s*cli-help\s*-->")
ALL_RESULTS = re.compile(r"<!--\s*benchmark-results\s*-->")
ONE_RESULT = re.compile(r"<!--\s*results:\s*([\w.| -]+?)\s*-->")
FIGS = re.compile(r"<!--\s*results-figures:\s*([\w.-]+)\s*-->")
HEADING = re.compile(r"^(#{1,5}) ", re.M)
ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|data|mod|obj|exc|const|term|ref):(?=<code>)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def _demote(text: str, levels: int) -> str:
    """Push every Markdown heading of ``text`` down ``levels`` levels (code blocks untouched)."""
    out, last = [], 0
    for m in FENCE.finditer(text):
        out.append(HEADING.sub(lambda h: "#" * levels + h.group(0), text[last:m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(HEADING.sub(lambda h: "#" * levels + h.group(0), text[last:]))
    return "".join(out)


def _cli_help() -> str:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    os.environ["COLUMNS"] = "80"  # argparse wraps at the terminal's width: fix it for the page
    from onlinemkl.cli._args import build_parser

    parser = build_parser()
    parts = ["## onlinemkl --help\n", "```text\n" + parser.format_help().rstrip() + "\n```\n"]
    for action in parser._subparsers._group_actions:  # argparse keeps the subcommands here
        for name, sub in action.choices.items():
            parts.append(f"## onlinemkl {name}\n")
            parts.append("```text\n" + sub.format_help().rstrip() + "\n```\n")
    return "\n".join(parts)


def _result_files() -> list[pathlib.Path]:
    files = sorted(RESULTS.glob("*.md"))
    return sorted(files, key=lambda p: (p.name != "SUMMARY.md", p.name))


def _one_result(names: str) -> str:
    names = [n.strip() for n in names.split("|") if n.strip()]
    for name in names:
        path = RESULTS / f"{name}.md"
        if path.exists():
            return f"`benchmarks/results/{path.name}`:\n\n" + _demote(path.read_text(encoding="utf-8"), 2)
    return (f"*`benchmarks/results/{names[0]}.md` is not in this build; `python benchmarks/run_all.py` "
            "writes every result.*\n")


def _all_results() -> str:
    parts = []
    for path in _result_files():
        text = _demote(path.read_text(encoding="utf-8"), 1)
        where = f"`benchmarks/results/{path.name}`"
        if text.startswith("## "):  # the file's name and title head its section
            title, _, rest = text.partition("\n")
            parts.append(f"## {path.stem}: {title[3:]}\n\n{where}\n{rest}")
        else:
            parts.append(f"## {path.stem}\n\n{where}\n\n{text}")
    return "\n".join(parts) if parts else "*No results in `benchmarks/results/` in this build.*\n"


def _figures(prefix: str, page) -> str:
    depth = page.file.src_uri.count("/")
    out = []
    for png in sorted(RESULTS.glob(f"{prefix}*.png")):
        out.append(f"![{png.stem}]({'../' * depth}{FIGURES}/{png.name})\n")
    return "\n".join(out)


def on_files(files, config):
    for png in sorted(RESULTS.glob("*.png")):
        files.append(File.generated(config, f"{FIGURES}/{png.name}", abs_src_path=str(png)))
    return files


def on_page_content(html, page, config, files):
    return ROLE.sub("", html)


def on_page_markdown(markdown, page, config, files):
    if CLI.search(markdown):
        markdown = CLI.sub(lambda m: _cli_help(), markdown)
    if ALL_RESULTS.search(markdown):
        markdown = ALL_RESULTS.sub(lambda m: _all_results(), markdown)
    markdown = ONE_RESULT.sub(lambda m: _one_result(m.group(1)), markdown)
    markdown = FIGS.sub(lambda m: _figures(m.group(1), page), markdown)
    return markdown
