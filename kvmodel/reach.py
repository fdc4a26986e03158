"""How much of a component's model a run reaches: branch coverage of the model modules its
operations run through (``kvmodel.contracts``: the component's contract modules), measured with
coverage.py while the model side of a differential check runs (issue 58).

A branch is an arc from a line that can go two ways (an ``if``, a loop's test, a ``match`` arm)
to one of its destinations, as coverage.py counts them. The figure is the share of the modules'
branches a run took; ``missed`` lists, per module, the lines whose branches a run never took
both ways (where to look for the paths a workload does not reach). Code the component's
operations cannot reach at all (another backend's half of a shared module, the debug helpers)
counts as missed: the figure is a floor, compared across runs and generator settings, not a
score to reach 100.

Only the thread that starts the measurement and the threads it starts later are measured: the
adapter's thread is started before (``Caller.start``), so an implementation that is kvmodel's
own model (``ModelAdapter``) does not count twice.
"""

from __future__ import annotations

import importlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import attrs


def model_files(component: str) -> list[str]:
    """The source files of the model modules ``component``'s operations reach."""
    from kvmodel import contracts

    out = []
    for mod in contracts.modules(component):
        m = importlib.import_module(f"kvmodel.model.{mod}")
        if m.__file__:
            out.append(os.path.realpath(m.__file__))
    return sorted(set(out))


@attrs.define
class Reach:
    """A branch-coverage measurement of ``component``'s model (a context manager)."""

    component: str
    files: list[str] = attrs.field(factory=list)
    _cov: Any = None
    result: dict[str, Any] | None = None

    def __enter__(self) -> Reach:
        try:
            import coverage
        except ImportError:  # a run without coverage.py reports no figure rather than failing
            return self
        self.files = model_files(self.component)
        self._cov = coverage.Coverage(branch=True, data_file=None, include=self.files, config_file=False)
        self._cov.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._cov is None:
            return
        self._cov.stop()
        fd, path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            self._cov.json_report(morfs=self.files, outfile=path)
            raw = json.loads(Path(path).read_text())
        except Exception:  # coverage.py found nothing to report (no model line ran)
            raw = {"files": {}}
        finally:
            os.unlink(path)
        self.result = summarize(raw, self.files)


def summarize(raw: dict[str, Any], files: list[str]) -> dict[str, Any]:
    """The figures of a coverage.py JSON report: branches taken of all, per module and in all,
    and per module the lines with a branch never taken (at most 40 each)."""
    per: dict[str, dict[str, Any]] = {}
    total = taken = 0
    by_real = {os.path.realpath(k): v for k, v in raw.get("files", {}).items()}
    for f in files:
        data = by_real.get(f)
        name = _module_name(f)
        if data is None:
            per[name] = {"branches": None, "taken": 0, "missed_lines": []}
            continue
        s = data["summary"]
        n, k = int(s.get("num_branches", 0)), int(s.get("covered_branches", 0))
        total += n
        taken += k
        missed = sorted({int(a[0]) for a in data.get("missing_branches", [])})
        per[name] = {"branches": n, "taken": k, "missed_lines": missed[:40]}
    return {
        "branches": total,
        "taken": taken,
        "percent": round(100.0 * taken / total, 1) if total else None,
        "modules": per,
    }


def _module_name(path: str) -> str:
    """``kvmodel.model.g1.kvbm_backend`` for the file of that module."""
    from kvmodel import model

    root = os.path.dirname(os.path.realpath(model.__file__ or ""))
    rel = os.path.relpath(path, root)
    return "kvmodel.model." + rel[: -len(".py")].replace(os.sep, ".")


def line(reach: dict[str, Any] | None) -> str:
    """One line for a report: ``branch coverage of the model: 412/530 (77.7 %)``."""
    if not reach or not reach.get("branches"):
        return "branch coverage of the model: not measured"
    return f"branch coverage of the model: {reach['taken']}/{reach['branches']} ({reach['percent']} %)"
