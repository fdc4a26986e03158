"""The installed package's import graph, read from the source (no import is run): which module
imports which, at module level or inside a function, and the cycles of that graph.

``python tools/import_graph.py [CHECKOUT]`` prints the cycles (strongly connected components of two or more
modules, with their edges) and the count of function-local imports; it exits 1 when a cycle
exists. Importing ``a.b.c`` imports the packages ``a.b`` and ``a`` first, so an edge to a module
is also an edge to each package above it (unless the importer is inside that package). Imports
under ``if TYPE_CHECKING:`` are not run and not counted."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the installed package's folders (pyproject.toml's package-dir)
PACKAGES = {
    "kvmodel": "kvmodel",
    "kvmodel.model": "model",
    "kvmodel.invariants": "invariants",
    "kvmodel.specs": "specs",
}


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Module name -> file, for every module of the installed package."""
    out: dict[str, Path] = {}
    for pkg, folder in PACKAGES.items():
        for p in sorted((root / folder).rglob("*.py")):
            parts = list(p.relative_to(root / folder).with_suffix("").parts)
            if pkg == "kvmodel" and parts[0] in ("model", "invariants", "specs"):
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([pkg, *parts])] = p
    return out


def _owner(name: str, mods: dict[str, Path]) -> str | None:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _imports(tree: ast.AST, me: str, is_pkg: bool) -> Iterator[tuple[str, int]]:
    """(imported name, the import statement's line when inside a function, else 0) for each
    name an import statement of a module's syntax tree imports."""

    def walk(node: ast.AST, inside: bool) -> Iterator[tuple[str, int]]:
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, ast.If) and "TYPE_CHECKING" in ast.unparse(ch.test):
                continue
            if isinstance(ch, ast.Import):
                yield from ((a.name, ch.lineno * inside) for a in ch.names)
            elif isinstance(ch, ast.ImportFrom):
                base = ch.module or ""
                if ch.level:
                    pkg = me if is_pkg else me.rpartition(".")[0]
                    for _ in range(ch.level - 1):
                        pkg = pkg.rpartition(".")[0]
                    base = f"{pkg}.{base}" if base else pkg
                yield from ((f"{base}.{a.name}", ch.lineno * inside) for a in ch.names)
            yield from walk(ch, inside or isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    return walk(tree, False)


def graph(mods: dict[str, Path]) -> tuple[dict[str, set[str]], int]:
    """Module -> the package modules importing it runs (at module level or in a function), and the
    count of function-local import statements that import package modules."""
    edges: dict[str, set[str]] = {m: set() for m in mods}
    local: set[tuple[str, int]] = set()
    for me, path in mods.items():
        for name, inside in _imports(ast.parse(path.read_text(), str(path)), me, path.name == "__init__.py"):
            target = _owner(name, mods)
            if target is None or target == me:
                continue
            if inside:
                local.add((me, inside))
            up = target
            while up:
                if up in mods and up != me and not me.startswith(up + "."):
                    edges[me].add(up)
                up = up.rpartition(".")[0]
    return edges, len(local)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of two or more modules (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(edges)))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def main(argv: list[str]) -> int:
    edges, local = graph(modules(Path(argv[0]) if argv else ROOT))
    found = cycles(edges)
    for c in found:
        print(f"cycle of {len(c)}: " + ", ".join(f"{m} -> {t}" for m in c for t in sorted(edges[m] & set(c))))
    print(f"{len(found)} import cycles; {local} function-local import statements of package modules")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
