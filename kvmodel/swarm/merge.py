"""Merging a campaign's results into one report: per task, per cell, per quirk, the first
counterexample per (component, invariant) and per conformance target saved as a trace, and the
verdict (:mod:`kvmodel.verdicts`) that the JSON, text, JUnit and HTML outputs all give.

A cell's outcome: a quirk cell passes when at least one of its tasks reproduced the quirk (a
diversified world may be too small to show it; that task alone is no failure), and is a
violation when none did and every one that ran completed; any other cell takes the most severe
outcome of its tasks (an ideal model's counterexample anywhere is a violation). A task that
crashed is an ``error`` of the campaign whatever its cell says.

Everything outside the ``run`` section depends only on the campaign (seed, matrix,
distribution, task count): not on the number of workers, the order of completion or a worker
that died. ``run`` holds the timings, the workers and what was rerun.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kvmodel import traces
from kvmodel.engines import Case
from kvmodel.jsonio import write_text
from kvmodel.swarm.campaign import RunLog
from kvmodel.swarm.tasks import CONFORM, FORMAT, Cell, Distribution, case_of
from kvmodel.verdicts import worst


def _label(engine: str, case: Case) -> str:
    """The check's name as ``kvmodel check`` prints it."""
    if engine == "z3":
        return {"ideal": "ideal (k-induction)", "faithful": "faithful (BMC)"}.get(case.kind, f"{case.label} (BMC)")
    if engine == CONFORM:
        return f"conformance {case.quirk}"
    if engine == "explore":
        from kvmodel.engines.explore import search_suffix

        return case.label + search_suffix(case)
    return case.label


def _task_verdict(case: Case, outcome: str) -> str:
    if case.kind == "quirk":
        return {"pass": "reproduced", "violation": "not reproduced"}.get(outcome, outcome)
    if case.kind == "conform":
        return "DIVERGENCE" if outcome == "violation" else outcome
    return case.verdict_word(outcome) if outcome in ("pass", "violation") else outcome


def _cell_outcome(case: Case, outcomes: list[str]) -> str:
    if case.kind == "quirk":
        if "pass" in outcomes:
            return "pass"
        return "violation" if outcomes and all(o == "violation" for o in outcomes) else worst(outcomes)
    return worst(outcomes)


def _cell_verdict(cell: Cell, outcome: str) -> str:
    if outcome not in ("pass", "violation"):
        return outcome
    if cell.engine == CONFORM:
        return "DIVERGENCE" if outcome == "violation" else "pass"
    return cell.case.verdict_word(outcome)


def _finding_key(component: str, case: Case, violation: Mapping[str, Any]) -> tuple[str, str, str]:
    """Counterexamples are kept per (component, model, invariant): the model is the case's
    (``ideal``, ``faithful``, ``quirk Q``), so each quirk keeps its own; a conformance
    target's per (component, ``conform``, target)."""
    if case.kind == "conform":
        return (component, "conform", case.quirk or "")
    return (component, case.label, str(violation.get("invariant", "")))


def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in text)


def merge(
    log: RunLog,
    matrix: list[Cell],
    *,
    seed: int,
    requested: Mapping[str, Any],
    dist: Distribution,
    out_dir: Path | None,
) -> dict[str, Any]:
    """The campaign's summary (JSON-ready); writes the first counterexample of each
    (component, invariant) and of each conformance target to ``out_dir``."""
    ids = sorted(log.results)
    rows: list[dict[str, Any]] = []
    by_cell: dict[str, list[dict[str, Any]]] = {}
    first: dict[tuple[str, str, str], int] = {}
    for tid in ids:
        task, res = log.tasks[tid], log.results[tid]
        case = case_of(task.component, task.case)
        row = {
            **task.to_json(),
            "check": _label(task.engine, case),
            "outcome": res["outcome"],
            "verdict": _task_verdict(case, res["outcome"]),
            "steps": res.get("steps", 0),
            "violation": res.get("violation"),
            "found": res.get("found", []),
            "error": res.get("error"),
        }
        for k in ("states", "examples", "complete", "divergences"):
            if k in res:
                row[k] = res[k]
        rows.append(row)
        by_cell.setdefault(task.cell, []).append(row)
        v = res.get("violation")
        if v and res.get("trace_doc") is not None:
            first.setdefault(_finding_key(task.component, case, v), tid)
    saved: dict[tuple[str, str, str], str] = {}
    findings = []
    for key, tid in sorted(first.items()):
        comp, model, what = key
        task, res = log.tasks[tid], log.results[tid]
        path = None
        if out_dir is not None:
            name = f"swarm-{comp}-{_safe(model)}-{_safe(what)}-task{tid}.json"
            if task.engine == CONFORM:
                p = out_dir / name
                p.parent.mkdir(parents=True, exist_ok=True)
                write_text(p, json.dumps(res["trace_doc"], indent=2, sort_keys=True) + "\n")
            else:
                p = traces.write(res["trace_doc"], out_dir / name)
            path = str(p)
            saved[key] = path
        v = res["violation"]
        findings.append(
            {
                "component": comp,
                "model": model,
                "target" if task.engine == CONFORM else "invariant": what,
                "task": tid,
                "engine": task.engine,
                "check": _label(task.engine, case_of(comp, task.case)),
                "length": v["step"] + 1 if isinstance(v.get("step"), int) else None,
                "trace": path,
            }
        )
    cells: list[dict[str, Any]] = []
    for cell in matrix:
        trs = by_cell.get(cell.name, [])
        if not trs:
            continue
        outcome = _cell_outcome(cell.case, [r["outcome"] for r in trs])
        hit = [r for r in trs if r["violation"]]
        v = hit[0]["violation"] if hit else None
        key = _finding_key(cell.component, cell.case, v or {})
        cells.append(
            {
                "engine": cell.engine,
                "component": cell.component,
                "check": _label(cell.engine, cell.case),
                "outcome": outcome,
                "verdict": _cell_verdict(cell, outcome),
                "tasks": [r["id"] for r in trs],
                "found_by": [r["id"] for r in trs if r["outcome"] == "pass"]
                if cell.case.kind == "quirk"
                else [r["id"] for r in trs if r["violation"]],
                "steps": sum(int(r["steps"] or 0) for r in trs),
                "states": sum(int(r.get("states") or 0) for r in trs) if cell.engine == "explore" else None,
                "violation": {**v, "trace_path": saved.get(key)} if v else None,
                "trace": saved.get(key) if v else None,
                "error": next((r["error"] for r in trs if r["error"]), None),
            }
        )
    quirks: dict[tuple[str, str], dict[str, Any]] = {}
    for cell, c in zip([x for x in matrix if by_cell.get(x.name)], cells, strict=True):
        if cell.case.kind != "quirk":
            continue
        q = quirks.setdefault(
            (cell.component, cell.case.quirk or ""),
            {"component": cell.component, "quirk": cell.case.quirk, "tasks": 0, "reproduced_by": [], "engines": {}},
        )
        q["tasks"] += len(c["tasks"])
        q["reproduced_by"] += c["found_by"]
        q["engines"][cell.engine] = c["verdict"]
    quirk_rows = []
    for q in quirks.values():
        q["reproduced_by"] = sorted(q["reproduced_by"])
        q["reproduced"] = bool(q["reproduced_by"])
        quirk_rows.append(q)
    errors = [r for r in rows if r["outcome"] == "error"]
    verdict = worst([c["outcome"] for c in cells] + ["error" for _ in errors])
    by_engine: dict[str, int] = {}
    for r in rows:
        by_engine[r["engine"]] = by_engine.get(r["engine"], 0) + 1
    return {
        "format": FORMAT,
        "title": "kvmodel swarm",
        "verdict": verdict,
        "ok": verdict == "pass",
        "campaign": {
            "seed": seed,
            **requested,
            "distribution": dist.to_json(),
            "cells": len(matrix),
        },
        "components": list(requested.get("components", [])),
        "engines": list(requested.get("engines", [])),
        "mode": requested.get("mode", "both"),
        "profile": "swarm",
        "seed": seed,
        "counts": {
            "tasks": len(rows),
            "anchors": sum(1 for r in rows if r["anchor"]),
            "by_engine": dict(sorted(by_engine.items())),
            "errors": len(errors),
            "cells": len(cells),
            "cells_as_expected": sum(1 for c in cells if c["outcome"] == "pass"),
            "quirks_covered": len(quirk_rows),
            "quirks_reproduced": sum(1 for q in quirk_rows if q["reproduced"]),
            "counterexamples": len(findings),
        },
        "quirks": quirk_rows,
        "findings": findings,
        "errors": [{"id": r["id"], "task": log.tasks[r["id"]].describe(), "error": r["error"]} for r in errors],
        "results": cells,
        "tasks": rows,
        "run": run_section(log),
    }


def run_section(log: RunLog) -> dict[str, Any]:
    """What depends on the run, not on the campaign: timings, workers, reruns."""
    per_worker: dict[str, int] = {}
    busy = 0.0
    for res in log.results.values():
        t = res.get("timing") or {}
        w = str(t.get("worker"))
        per_worker[w] = per_worker.get(w, 0) + 1
        busy += float(t.get("seconds") or 0.0)
    n = len(log.results)
    return {
        "scheduler": log.scheduler,
        "workers": log.workers,
        "per_worker": dict(sorted(per_worker.items())),
        "seconds": round(log.seconds, 3),
        "task_seconds": round(busy, 3),
        "tasks_per_second": round(n / log.seconds, 3) if log.seconds else None,
        "reruns": log.reruns,
        "workers_lost": log.workers_lost,
        "stopped_by_budget": log.stopped_by_budget,
        "timings": {str(k): log.results[k].get("timing") for k in sorted(log.results)},
    }


def text_lines(summary: Mapping[str, Any]) -> list[str]:
    """The lines ``kvmodel swarm`` prints without ``--json``."""
    out = []
    for c in summary["results"]:
        where = ""
        if v := c.get("violation"):
            where = f"  {v['invariant']} at step {v['step']}" + (f" -> {c['trace']}" if c.get("trace") else "")
        if c.get("error"):
            where += f"  error: {c['error']}"
        out.append(
            f"[{c['engine']}] {c['component']:<22} {c['check']:<42} {c['verdict']:<15} {len(c['tasks'])} task(s)"
            + where
        )
    for e in summary["errors"]:
        out.append(f"error: {e['task']}: {e['error']}")
    n, r = summary["counts"], summary["run"]
    rerun = f"; {len(r['reruns'])} task(s) rerun after {r['workers_lost']} worker(s) died" if r["reruns"] else ""
    out.append(
        f"swarm: {n['tasks']} tasks ({n['anchors']} anchors) on {r['workers']} worker(s) in {r['seconds']:.1f}s; "
        f"{n['errors']} error(s); {n['quirks_reproduced']} of {n['quirks_covered']} quirks reproduced; "
        f"{n['cells_as_expected']} of {n['cells']} cells as expected{rerun}; verdict: {summary['verdict']}"
    )
    return out
