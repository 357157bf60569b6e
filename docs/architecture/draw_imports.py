"""Draw onlinemkl's import structure as a Mermaid graph (Markdown), from the sources.

One node per module or subpackage directly under ``onlinemkl`` (a subpackage's modules drawn as
one), plus ``streams``; an arrow for every import between two of them, function-level imports
included (grimp's graph).  Nodes are grouped by the layers of ``[tool.importlinter]`` in this
checkout's pyproject.toml, highest first (also when drawing another checkout, so that two
drawings compare).  Arrows inside an import cycle
(between modules, not just between the drawn nodes) are red, and the cycles are listed below.
Imports of the root package (``from onlinemkl import __version__``) are left out.

    python docs/architecture/draw_imports.py [CHECKOUT [TITLE]] > docs/architecture/imports-after.md

CHECKOUT (default: this one) is the source tree to read; the script puts it first on ``sys.path``.
TITLE is the page's heading.
"""

from __future__ import annotations

import pathlib
import sys


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[0] if parts[0] != "onlinemkl" else ".".join(parts[:2]) if len(parts) > 1 else ""


def _cycles(graph) -> list:
    """The import cycles: strongly connected components of more than one module, largest first."""
    import numpy as np
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    modules = sorted(graph.modules)
    index = {m: i for i, m in enumerate(modules)}
    edges = [(index[a], index[b]) for a in modules for b in graph.find_modules_directly_imported_by(a)]
    rows, cols = np.array(edges, dtype=np.int64).reshape(-1, 2).T
    _, labels = connected_components(coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(modules),) * 2),
                                     directed=True, connection="strong")
    groups = {}
    for m, label in zip(modules, labels):
        groups.setdefault(label, []).append(m)
    return sorted((g for g in groups.values() if len(g) > 1), key=lambda c: (-len(c), c))


def _layers(root: pathlib.Path) -> list:
    try:
        from importlinter import api

        config = api.read_configuration(str(root / "pyproject.toml"))
    except FileNotFoundError:  # no configuration: draw without layers
        return []
    for contract in config["contracts_options"]:
        if contract["type"] == "layers":
            return [[m.strip() for part in layer.split("|") for m in part.split(":")] for layer in contract["layers"]]
    return []


def draw(root: pathlib.Path, layers_from: pathlib.Path, title: str) -> str:
    sys.path.insert(0, str(root))
    import grimp

    graph = grimp.build_graph("onlinemkl", "streams", cache_dir=None)
    cycles = _cycles(graph)
    in_cycle = {m: i for i, c in enumerate(cycles) for m in c}
    edges, red = set(), set()
    for a in graph.modules:
        for b in graph.find_modules_directly_imported_by(a):
            ta, tb = _top(a), _top(b)
            if ta and tb and ta != tb:
                edges.add((ta, tb))
                if a in in_cycle and in_cycle.get(b) == in_cycle[a]:
                    red.add((ta, tb))
    nodes = sorted({_top(m) for m in graph.modules} - {""})
    node_id = {n: n.replace("onlinemkl.", "").replace(".", "_").strip("_") or n for n in nodes}
    label = {n: n.replace("onlinemkl.", "") for n in nodes}

    lines = [f"# {title}", "",
             "One box per module or subpackage of `onlinemkl`, grouped by the layers of `[tool.importlinter]` "
             "(layer 1 the highest); an arrow for every import between two boxes, imports inside functions "
             "included. Drawn by `docs/architecture/draw_imports.py`.", "", "```mermaid", "flowchart TD"]
    layers = _layers(layers_from)
    placed = set()
    for i, layer in enumerate(layers):
        members = [n for n in layer if n in node_id]
        lines.append(f"  subgraph L{i}[\"layer {i + 1}\"]")
        lines += [f"    {node_id[n]}[\"{label[n]}\"]" for n in members]
        lines.append("  end")
        placed.update(members)
    lines += [f"  {node_id[n]}[\"{label[n]}\"]" for n in nodes if n not in placed]
    ordered = sorted(edges)
    lines += [f"  {node_id[a]} --> {node_id[b]}" for a, b in ordered]
    lines += [f"  linkStyle {i} stroke:red,stroke-width:2px" for i, e in enumerate(ordered) if e in red]
    lines.append("```")
    lines.append("")
    if cycles:
        lines.append(f"Import cycles between modules ({len(cycles)}; their arrows between two boxes are red):")
        lines.append("")
        lines += [f"- {len(c)} modules: {', '.join(m.replace('onlinemkl.', '') for m in c)}" for c in cycles]
    else:
        lines.append("No import cycle between modules.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    here = pathlib.Path(__file__).resolve().parents[2]
    root = pathlib.Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else here
    title = sys.argv[2] if len(sys.argv) > 2 else "Imports between onlinemkl's modules"
    sys.stdout.write(draw(root, here, title))
