"""JUnit XML for ``kvmodel check --junit FILE``: CI systems show one test per check.

Test cases: for each ideal check, one per (component, engine, invariant) — it fails when
that engine found the invariant violated (or, for Z3, when it was not proved); for each
quirk check, one per (component, engine, quirk) — it fails when the quirk's declared
breakage was not reproduced; one for the conformance check. Suites group them by
``component.engine``. A check whose verdict is ``error`` or ``inconclusive`` (a missing real
part, a solver timeout, a search stopped at a bound, nothing run) is a JUnit ``error``, never a
pass; a ``violation`` is a ``failure`` (:mod:`kvmodel.verdicts`). Output is deterministic.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from typing import Any


def _cases(row: dict[str, Any]) -> list[tuple[str, str | None, str]]:
    """(name, failure message or None, detail) for one check row."""
    from kvmodel import invariants

    comp, check, verdict = row["component"], row["check"], row["verdict"]
    v = row.get("violation") or {}
    if check.startswith("quirk"):
        ok = verdict == "reproduced"
        msg = None if ok else f"{check}: {verdict}"
        return [(check, msg, f"{v.get('invariant', '')} at step {v.get('step', '')}" if v else "")]
    if row["engine"] == "conform":
        msg = None if verdict == "pass" else f"{verdict}: {row.get('error') or v}"
        return [(check, msg, "")]
    out: list[tuple[str, str | None, str]] = []
    if row.get("invariants"):  # Z3 gives a status per invariant
        for r in row["invariants"]:
            bad = r["status"] != "proved"
            out.append((f"{check}: {r['invariant']}", f"{r['status']}: {r.get('detail', '')}" if bad else None, ""))
        return out
    try:
        declared = invariants.for_component(comp)
    except Exception:  # a row of no component (a campaign's lost scheduler): one case
        declared = ()
    for inv in declared:
        bad = v.get("invariant") == inv.name or (row.get("error") and verdict != "pass")
        msg = f"{v.get('message') or row.get('error')}" if bad else None
        out.append((f"{check}: {inv.name}", msg, row.get("trace") or ""))
    if not declared:
        out.append((check, None if verdict == "pass" else f"{verdict}: {row.get('error') or v}", ""))
    return out


def junit_xml(results: Iterable[dict[str, Any]]) -> str:
    suites: dict[str, list[tuple[str, str | None, str, float, str]]] = {}
    for row in results:
        key = f"{row['component']}.{row['engine']}"
        outcome = row.get("outcome") or ("pass" if row["verdict"] in ("pass", "reproduced") else "violation")
        found = _cases(row)
        if outcome in ("error", "inconclusive"):
            why = f"{outcome}: {row.get('error') or row['verdict']}"
            found = [(name, msg or why, detail) for name, msg, detail in found]
        t = float(row.get("seconds") or 0.0) / max(1, len(found))
        for name, msg, detail in found:
            kind = "failure" if outcome == "violation" or (outcome == "pass" and msg) else "error"
            suites.setdefault(key, []).append((name, msg, detail, t, kind))
    root = ET.Element("testsuites", name="kvmodel check")
    total = fails = errs = 0
    for key in sorted(suites):
        cases = suites[key]
        n_fail = sum(1 for c in cases if c[1] is not None and c[4] == "failure")
        n_err = sum(1 for c in cases if c[1] is not None and c[4] == "error")
        total += len(cases)
        fails += n_fail
        errs += n_err
        suite = ET.SubElement(
            root,
            "testsuite",
            name=key,
            tests=str(len(cases)),
            failures=str(n_fail),
            errors=str(n_err),
            skipped="0",
            time=f"{sum(c[3] for c in cases):.3f}",
        )
        for name, msg, detail, t, kind in cases:
            tc = ET.SubElement(suite, "testcase", classname=key, name=name, time=f"{t:.3f}")
            if msg is not None:
                f = ET.SubElement(tc, kind, message=msg[:500], type="violation" if kind == "failure" else "error")
                f.text = detail or msg
            elif detail:
                ET.SubElement(tc, "system-out").text = detail
    root.set("tests", str(total))
    root.set("failures", str(fails))
    root.set("errors", str(errs))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
