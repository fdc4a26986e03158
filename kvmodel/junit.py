"""JUnit XML for ``kvmodel check --junit FILE``: CI systems show one test per check.

Test cases: for each ideal check, one per (component, engine, invariant) — it fails when
that engine found the invariant violated (or, for Z3, when it was not proved); for each
quirk check, one per (component, engine, quirk) — it fails when the quirk's declared
breakage was not reproduced; one for the conformance check. Suites group them by
``component.engine``. Output is deterministic (sorted, fixed formatting).
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
    for inv in invariants.for_component(comp):
        bad = v.get("invariant") == inv.name or (row.get("error") and verdict != "pass")
        msg = f"{v.get('message') or row.get('error')}" if bad else None
        out.append((f"{check}: {inv.name}", msg, row.get("trace") or ""))
    return out


def junit_xml(results: Iterable[dict[str, Any]]) -> str:
    suites: dict[str, list[tuple[str, str | None, str, float]]] = {}
    for row in results:
        key = f"{row['component']}.{row['engine']}"
        found = _cases(row)
        t = float(row.get("seconds") or 0.0) / max(1, len(found))
        for name, msg, detail in found:
            suites.setdefault(key, []).append((name, msg, detail, t))
    root = ET.Element("testsuites", name="kvmodel check")
    total = fails = 0
    for key in sorted(suites):
        cases = suites[key]
        n_fail = sum(1 for c in cases if c[1] is not None)
        total += len(cases)
        fails += n_fail
        suite = ET.SubElement(
            root,
            "testsuite",
            name=key,
            tests=str(len(cases)),
            failures=str(n_fail),
            errors="0",
            skipped="0",
            time=f"{sum(c[3] for c in cases):.3f}",
        )
        for name, msg, detail, t in cases:
            tc = ET.SubElement(suite, "testcase", classname=key, name=name, time=f"{t:.3f}")
            if msg is not None:
                f = ET.SubElement(tc, "failure", message=msg[:500], type="violation")
                f.text = detail or msg
            elif detail:
                ET.SubElement(tc, "system-out").text = detail
    root.set("tests", str(total))
    root.set("failures", str(fails))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
