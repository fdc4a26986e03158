"""The mutation benchmark: every mutant against every engine; writes ``benchmarks/mutation.json``.

Peer, in the same run: the explorer (exhaustive BFS) is the reference for counterexample length
(its first violation is at the minimal depth), and the engines are compared with each other on
the same mutants: kill rate, median time to kill, and Hypothesis's counterexample length over
the BFS minimum. Usage: ``python benchmarks/mutation.py``.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

from kvmodel import __version__, jsonio
from kvmodel.mutants import runner

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    rep = runner.run(runner.ENGINES, progress=lambda line: print(line, flush=True))
    rep["kvmodel"] = __version__
    rep["python"] = platform.python_version()
    for row in rep["mutants"]:  # keep the file small: drop the long disagreement texts
        for e in row["engines"].values():
            e.pop("detail", None)
    out = ROOT / "benchmarks" / "mutation.json"
    jsonio.write_text(out, json.dumps(rep, indent=2, sort_keys=True) + "\n")
    print(json.dumps(rep["summary"], indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
