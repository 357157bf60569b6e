"""The package's docstrings and comments point only at what an installed package has.

A user of ``onlinemkl`` has its modules and the papers it cites, not the repository's benchmark
result files, design notes or issue tracker: a docstring states the fact itself (or cites the
paper), so these pointers are refused in ``onlinemkl/`` and ``streams/``.
"""

import re
from pathlib import Path

import onlinemkl
import streams

ROOTS = [Path(onlinemkl.__file__).parent, Path(streams.__file__).parent]

POINTERS = re.compile(r"benchmarks/results|results/\w+\.md|DESIGN\.md|ALGORITHMS\.md|\.\./shared|/work/shared"
                      r"|\b[Ii]ssue \d|#\d{1,3}\b")


def test_sources_point_only_at_what_the_package_has():
    hits = [f"{path}:{n}: {line.strip()}"
            for root in ROOTS for path in sorted(root.rglob("*.py"))
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if POINTERS.search(line)]
    assert not hits, ("state the fact (or cite the paper) instead of pointing at a file or issue the "
                      "package does not ship:\n" + "\n".join(hits))
