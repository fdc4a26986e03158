"""The same exhaustive searches under CPython, under PyPy, and compiled by Cython (issue 25, goal 3).

Goal 3 asks 10k canonical states/s of the G1 and KVBM searches; the nineteenth session's
profile put the ceiling of the model's own step and copy in CPython under that
(``g1_step_costs.py``). The question left to the team was whether running the explorer on
another interpreter, or compiled, would close the gap. This measures it: each world is searched
to its end once per leg and repeat, every run in its own process, the legs alternating. The
peer, in the same run and under each leg, is the anchors' plain-Python toy-pool BFS
(``benchmarks/explore.py``'s ``peer``): what a JIT gives code built of tuples and small functions.

PyPy is not part of kvmodel's install: ``tools/fetch-pypy.sh DIR`` unpacks Debian forky's PyPy
8.0.1 (Python 3.11) into ``DIR`` and writes ``DIR/pypy``. Under PyPy the child imports kvmodel
from this checkout through a folder of links laid out as the installed package
(``tools/typecheck.py``'s layout), with ``DIR/site`` for attrs and xxhash; before it measures
anything it checks that PyPy's block hashes are CPython's. ``sys.getsizeof`` raises
``TypeError`` on PyPy unless given a default, so the explorer's bytes per state read 0 there
(patched in the child only; the figure is not compared).

``--cython`` adds a third leg: a copy of the package whose hot modules (``COMPILED``: the G1
models, their systems and spaces, the invariants, the explorer) are compiled by Cython as they
are, no type declarations added, run by this script's CPython (``pip install cython`` first; the
build takes a few minutes; the peer is the anchors' own file, not compiled). Bare ``super()`` is
spelled ``super(Class, self)`` in the copy: a compiled method has no ``__class__`` cell for attrs
to point at the slotted class it makes.

A world's searches must agree on everything but time (states, concrete states, transitions,
depth, violations, coverage): ``same`` in the JSON. Figures are the best of ``--repeats`` runs
(CPU time is what varies between runs of one search).

Writes ``benchmarks/results/interpreters.json``. Usage: ``python benchmarks/interpreters.py
[--pypy DIR/pypy] [--cython] [--repeats N] [--workers N] [--out FILE]`` (at least one of the first
two; ``--workers`` runs each G1 search on that many worker processes, the peer in one).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

from typecheck import MAP, link_installed_layout  # the package laid out as installed

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent

# (name, component, requests, capacity): the CLI's default world of each G1 component
# (``benchmarks/g1_worlds.py``'s), ideal, request symmetry on, searched to its end
WORLDS = [
    ("g1_native, 2 requests, capacity 4", "g1_native", 2, 4),
    ("g1_native, 3 requests, capacity 4", "g1_native", 3, 4),
    ("g1_kvbm, 2 requests, capacity 4", "g1_kvbm", 2, 4),
]
PEER = "peer: the anchors' toy-pool BFS"
# the modules the Cython build compiles (globs under the installed layout): the G1 models, their
# systems and spaces, the invariants, the explorer and the action machinery
COMPILED = [
    "kvmodel/model/g1/*.py",
    "kvmodel/model/hashing.py",
    "kvmodel/model/blocks.py",
    "kvmodel/components/g1_native/*.py",
    "kvmodel/components/g1_kvbm/*.py",
    "kvmodel/components/g1_requests.py",
    "kvmodel/invariants/*.py",
    "kvmodel/explorer.py",
    "kvmodel/systems.py",
    "kvmodel/actions.py",
]
# the hashes a child checks against CPython's before it measures (token lists and salts)
HASH_PROBES = [([1, 2, 3, 4], 0), ([7] * 16, 1337), (list(range(64)), 2**63 - 1)]


def _child(world: str, workers: int = 1) -> dict[str, Any]:
    """One search (or the peer) in this process, as a JSON-able record."""
    if sys.implementation.name == "pypy":
        plain = sys.getsizeof
        sys.getsizeof = lambda o, d=0: plain(o, d)  # type: ignore[assignment]
    from kvmodel.model import hashing

    out: dict[str, Any] = {
        "interpreter": f"{platform.python_implementation()} {'.'.join(map(str, sys.implementation.version[:3]))}"
        f" (Python {platform.python_version()})",
        "hashes": [hashing.block_hash(t, s) for t, s in HASH_PROBES],
        "compiled": not hashing.__file__.endswith(".py"),
    }
    sys.path.insert(0, str(HERE))
    if world == PEER:
        from explore import peer

        got = peer()
        if got is None:
            raise SystemExit("interpreters.py: the anchors' toy model is not on this machine")
        out.update(states=got["states"], transitions=got["transitions"], seconds=got["seconds"])
        return out
    from g1_worlds import WORLD  # the CLI's default G1 world, as the growth table searches it

    from kvmodel import components, explorer

    _, component, owners, capacity = next(w for w in WORLDS if w[0] == world)
    comp = components.get(component)
    space = comp.explore_space(components.World({}, {**WORLD, "owners": owners}))
    res = explorer.explore({"max_capacity": capacity}, (), space, max_states=5_000_000, workers=workers)
    out.update(
        states=res.states,
        concrete_states=res.concrete_states,
        transitions=res.transitions,
        depth=res.depth,
        complete=res.complete,
        violations=sorted(res.violations),
        coverage=res.coverage,
        seconds=round(res.seconds, 3),
    )
    return out


def _run(cmd: list[str], world: str, env: dict[str, str], workers: int) -> dict[str, Any]:
    p = subprocess.run(
        [*cmd, str(Path(__file__).resolve()), "--child", world, "--workers", str(workers)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),  # not the checkout: ``kvmodel/`` there is not the whole package
        check=False,
    )
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SystemExit(f"interpreters.py: {cmd[0]} failed on {world!r}: {tail}")
    return json.loads(p.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    keys = ("states", "concrete_states", "transitions", "depth", "complete", "violations", "coverage")
    return all(a.get(k) == b.get(k) for k in keys)


def _figures(r: dict[str, Any]) -> dict[str, Any]:
    return {"interpreter": r["interpreter"], "seconds": r["seconds"], "states_per_s": round(r["states"] / r["seconds"])}


def _explicit_super(path: Path) -> None:
    """``super()`` without arguments, spelled ``super(Class, self)`` in each top-level class: a
    compiled method has no ``__class__`` cell that attrs can point at the slotted class it makes
    in place of the one defined, so the bare form fails there (the named form looks the class up
    when it runs)."""
    lines = path.read_text().split("\n")
    cls = None
    for i, line in enumerate(lines):
        m = re.match(r"class (\w+)", line)
        if m:
            cls = m.group(1)
        if "super()" in line and cls is not None:
            lines[i] = line.replace("super()", f"super({cls}, self)")
    path.write_text("\n".join(lines))


def _compiled_copy(into: Path) -> Path:
    """A copy of the package laid out as installed, its hot modules (``COMPILED``) compiled by
    Cython as they are (no type declarations added); the rest stays Python."""
    pkg = into / "kvmodel"
    shutil.copytree(ROOT / "kvmodel", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    for name, where in MAP.items():
        shutil.copytree(ROOT / where, pkg / name, ignore=shutil.ignore_patterns("__pycache__"))
    mods = sorted({str(p.relative_to(into)) for g in COMPILED for p in into.glob(g) if p.name != "__init__.py"})
    for m in mods:
        _explicit_super(into / m)
    (into / "build_compiled.py").write_text(
        "from setuptools import setup\nfrom Cython.Build import cythonize\n"
        f"setup(ext_modules=cythonize({mods!r}, language_level=3, quiet=True, nthreads=2,\n"
        "      compiler_directives={'binding': True, 'always_allow_keywords': True}))\n"
    )
    p = subprocess.run(
        [sys.executable, "build_compiled.py", "build_ext", "--inplace"], cwd=into, capture_output=True, text=True
    )
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SystemExit(f"interpreters.py: the Cython build failed: {tail}")
    return into


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pypy", help="a PyPy 3.11 command (tools/fetch-pypy.sh DIR writes DIR/pypy)")
    ap.add_argument("--cython", action="store_true", help="also the same source built by Cython")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--workers", type=int, default=1, help="worker processes per G1 search (kvmodel explore --workers)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "interpreters.json"))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child is not None:
        print(json.dumps(_child(a.child, a.workers)))
        return 0
    if a.pypy is None and not a.cython:
        print("interpreters.py: give --pypy DIR/pypy (tools/fetch-pypy.sh DIR writes it), --cython, or both")
        return 2
    pypy = None if a.pypy is None else Path(a.pypy)
    if pypy is not None and (not pypy.is_file() or not os.access(pypy, os.X_OK)):
        print(f"interpreters.py: --pypy {a.pypy}: not an executable file (tools/fetch-pypy.sh DIR writes DIR/pypy)")
        return 2
    if a.cython and importlib.util.find_spec("Cython") is None:
        print("interpreters.py: --cython: Cython is not installed here (pip install cython)")
        return 2
    if not 1 <= a.workers <= 8:
        print(f"interpreters.py: --workers {a.workers}: must be from 1 to 8")
        return 2
    if a.repeats < 1:
        print(f"interpreters.py: --repeats {a.repeats}: must be at least 1")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        runs: dict[str, tuple[list[str], dict[str, str]]] = {"cpython": ([sys.executable], dict(os.environ))}
        if pypy is not None:
            links = link_installed_layout(Path(tmp) / "links")
            site = pypy.resolve().parent / "site"
            runs["pypy"] = ([str(pypy)], {**os.environ, "PYTHONPATH": os.pathsep.join([str(links), str(site)])})
        build_s = None
        if a.cython:
            t0 = time.perf_counter()
            compiled = _compiled_copy(Path(tmp) / "compiled")
            build_s = round(time.perf_counter() - t0, 1)
            runs["cython"] = ([sys.executable], {**os.environ, "PYTHONPATH": str(compiled)})
        rows = []
        for world in [PEER, *(w[0] for w in WORLDS)]:
            got: dict[str, list[dict[str, Any]]] = {name: [] for name in runs}
            for _ in range(a.repeats):
                for name, (cmd, env) in runs.items():  # alternated
                    got[name].append(_run(cmd, world, env, a.workers))
                    r = got[name][-1]
                    print(f"{world} [{name}: {r['interpreter']}]: {r['states']} states in {r['seconds']} s", flush=True)
            for name, v in got.items():
                if v[0]["hashes"] != got["cpython"][0]["hashes"]:
                    print(f"interpreters.py: the block hashes under {name} differ from CPython's")
                    return 1
                if name == "cython" and not v[0].get("compiled"):
                    print("interpreters.py: the compiled copy was not the one imported")
                    return 1
            best = {k: min(v, key=lambda r: r["seconds"]) for k, v in got.items()}
            c = best["cpython"]
            rows.append(
                {
                    "world": world,
                    "states": c["states"],
                    "concrete_states": c.get("concrete_states"),
                    "transitions": c["transitions"],
                    "same": all(_same(r, c) for v in got.values() for r in v),
                    **{k: _figures(r) for k, r in best.items()},
                    "speedup": {k: round(c["seconds"] / r["seconds"], 2) for k, r in best.items() if k != "cpython"},
                    "all_seconds": {k: [r["seconds"] for r in v] for k, v in got.items()},
                }
            )
    doc = {
        "benchmark": "interpreters",
        "what": "the same whole searches under CPython, PyPy and a Cython build of the same source, alternated, "
        "best of the repeats",
        "date": time.strftime("%Y-%m-%d"),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.strip(),
        "machine": {"cores": os.cpu_count(), "processor": platform.processor() or platform.machine()},
        "repeats": a.repeats,
        "workers": a.workers,
        "cython_build_seconds": build_s,
        "compiled_modules": COMPILED if a.cython else [],
        "rows": rows,
    }
    Path(a.out).write_text(json.dumps(doc, indent=2) + "\n")
    for r in rows:
        alts = ", ".join(f"{k} {r[k]['states_per_s']:,}/s ({x}x)" for k, x in r["speedup"].items())
        print(f"{r['world']}: CPython {r['cpython']['states_per_s']:,}/s, {alts}, same search: {r['same']}")
    return 0 if all(r["same"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
