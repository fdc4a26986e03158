"""State graphs from the explorer as Graphviz DOT and SVG, with a counterexample path marked.

The explorer (``explore(..., graph=True)``) gives a networkx ``DiGraph``: one node per
canonical state (attribute ``depth``), one edge per distinct transition (attribute ``op``,
the move kind), and in ``graph.graph["paths"]`` each violated invariant's shortest
counterexample as a node path. :func:`to_dot` writes it as DOT with the marked path drawn
red and numbered; :func:`to_svg` runs Graphviz ``dot`` (Debian package ``graphviz``) on it.
Same graph, same bytes: nodes and edges are written in sorted order.
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
from typing import Any

# Above this many transitions the whole graph is unreadable and `dot` slow (454 states with
# 1,677 edges: 30 s); the breadth-first tree is drawn instead.
FULL_EDGES = 400
# Above this many states even the tree is no picture (and dot grows superlinearly: a tree of
# several thousand states took minutes): the first MAX_DRAWN states breadth-first are drawn.
MAX_DRAWN = 300


class GraphvizError(Exception):
    """Graphviz is missing, failed, or the graph is too large to draw."""


def marked_path(graph: Any, invariant: str | None) -> tuple[str | None, list[int]]:
    """The invariant whose counterexample is marked (the named one, else the shallowest) and its path."""
    paths: dict[str, list[int]] = graph.graph.get("paths", {})
    if invariant is not None:
        if invariant not in paths:
            known = ", ".join(sorted(paths)) or "none was violated"
            raise GraphvizError(f"no counterexample to {invariant!r} in this graph (violated: {known})")
        return invariant, paths[invariant]
    if not paths:
        return None, []
    inv = min(paths, key=lambda k: (len(paths[k]), k))
    return inv, paths[inv]


def to_dot(graph: Any, *, mark: str | None = None, title: str = "kvmodel", tree: bool | None = None) -> str:
    """The graph in DOT; the counterexample to ``mark`` (default: the shallowest one) in red.

    With ``tree`` (default: when the graph has more than :data:`FULL_EDGES` edges) only the
    breadth-first spanning tree and the marked path are drawn — one column per depth — and
    the number of cross edges left out is said in the title."""
    inv, path = marked_path(graph, mark)
    on_path = {n: i for i, n in enumerate(path)}
    path_edges = set(itertools.pairwise(path))
    if tree is None:
        tree = graph.number_of_edges() > FULL_EDGES
    nodes = sorted(graph.nodes(data=True))
    shown_note = ""
    if len(nodes) > MAX_DRAWN:
        # the first states breadth-first (smallest depth, then id), the marked path always
        keep = {n for n, _ in sorted(nodes, key=lambda x: (x[1].get("depth", 0), x[0]))[:MAX_DRAWN]} | set(path)
        shown_note = f"; {len(keep)} of {len(nodes)} states drawn, breadth-first"
        nodes = [x for x in nodes if x[0] in keep]
    drawn = {n for n, _ in nodes}
    edges = [(a, b, d) for a, b, d in sorted(graph.edges(data=True)) if a in drawn and b in drawn]
    if tree:
        parents = {n: d.get("parent", -1) for n, d in graph.nodes(data=True)}
        kept = [(a, b, d) for a, b, d in edges if (a, b) in path_edges or (parents.get(b) == a and a != b)]
        title += f" (breadth-first tree; {len(edges) - len(kept)} other transitions not drawn)"
        edges = kept
    title += shown_note
    label = title + (f" — counterexample to {inv}, {len(path) - 1} step(s), in red" if inv else "")
    lines = [
        "digraph kvmodel {",
        f'  graph [rankdir=LR, label="{_esc(label)}", labelloc=t, fontname="Helvetica", fontsize=12];',
        '  node [shape=circle, width=0.25, fixedsize=true, label="", style=filled, '
        'fillcolor="#eeeeee", color="#888888"];',
        '  edge [color="#bbbbbb", arrowsize=0.5, fontsize=8, fontname="Helvetica", fontcolor="#777777"];',
    ]
    for n, data in nodes:
        attrs = [f'tooltip="state {n}, depth {data.get("depth", "?")}"', f'id="s{n}"']
        if n in on_path:
            last = on_path[n] == len(path) - 1
            attrs += [
                f'label="{on_path[n]}"',
                'fillcolor="#ffdddd"' if not last else 'fillcolor="#dd3333", fontcolor="white"',
                'color="#dd3333"',
                "penwidth=2",
            ]
        elif n == 0:
            attrs += ['fillcolor="#ddeeff"', 'color="#336699"']
        lines.append(f"  {n} [{', '.join(attrs)}];")
    for a, b, data in edges:
        op = _esc(str(data.get("op", "")))
        if (a, b) in path_edges:
            lines.append(f'  {a} -> {b} [label="{op}", color="#dd3333", fontcolor="#dd3333", penwidth=2.5];')
        else:
            lines.append(f'  {a} -> {b} [tooltip="{op}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _esc(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')


def dot_available() -> str | None:
    """``None`` when Graphviz ``dot`` can be run, else why not."""
    if shutil.which("dot") is None:
        return "Graphviz `dot` is not installed (Debian: apt-get install graphviz)"
    return None


def to_svg(graph: Any, *, mark: str | None = None, title: str = "kvmodel", timeout: float = 300.0) -> str:
    """Render with Graphviz ``dot -Tsvg``; raises :class:`GraphvizError` with a one-line reason."""
    why = dot_available()
    if why is not None:
        raise GraphvizError(why)
    text = to_dot(graph, mark=mark, title=title)
    try:
        done = subprocess.run(
            ["dot", "-Tsvg"], input=text, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as e:
        raise GraphvizError(f"Graphviz dot took more than {timeout:.0f}s") from e
    if done.returncode != 0:
        raise GraphvizError(f"Graphviz dot failed: {done.stderr.strip().splitlines()[-1:]}")
    return done.stdout


def write(graph: Any, title: str, mark: str | None, dot: str | None, svg: str | None) -> dict[str, Any]:
    """Write the state graph as DOT and/or SVG; what ``kvmodel explore --json`` reports of it."""
    from kvmodel.jsonio import write_text

    out: dict[str, Any] = {}
    if dot:
        write_text(dot, to_dot(graph, mark=mark, title=title))
        out["dot"] = dot
    if svg:
        write_text(svg, to_svg(graph, mark=mark, title=title))
        out["svg"] = svg
    out["graph_nodes"], out["graph_edges"] = graph.number_of_nodes(), graph.number_of_edges()
    out["marked"] = marked_path(graph, mark)[0]
    return out
