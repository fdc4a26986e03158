"""An HTML report of a whole ``kvmodel check`` run (``kvmodel check --html FILE``).

``FILE`` gets one table row per check (component, engine, check, verdict, effort, the
invariant broken and where); every counterexample trace the run wrote is rendered as its own
page by :func:`kvmodel.show.page` into ``<FILE stem>-traces/`` next to it, and linked from
its row. Everything is self-contained (inline CSS and SVG, no scripts, no network assets) and
deterministic: the same results give the same bytes (wall-clock seconds are left out).
"""

from __future__ import annotations

import contextlib
import html
import os
from pathlib import Path
from typing import Any

from kvmodel import show, traces
from kvmodel.jsonio import write_text

GOOD = ("pass", "reproduced")

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px} table{border-collapse:collapse;margin-top:12px}
th,td{border-bottom:1px solid #e4e4e4;padding:4px 10px;text-align:left;vertical-align:top}
th{background:#f6f6f6} td.n{text-align:right;font-variant-numeric:tabular-nums}
.ok{color:#063} .bad{color:#c00;font-weight:bold} .summary{padding:6px 12px;display:inline-block}
.summary.ok{background:#eefaf0} .summary.bad{background:#fff0f0} code{background:#f3f3f3;padding:1px 4px}
"""


def _effort(row: dict[str, Any]) -> str:
    if row.get("engine") == "explore":
        return f"{row.get('states', 0):,} states, {row.get('steps', 0):,} transitions"
    if row.get("engine") == "z3":
        return f"{row.get('steps', 0)} properties"
    if row.get("engine") == "conform":
        return f"{row.get('steps', 0):,} events"
    return f"{row.get('steps', 0):,} steps"


def write(summary: dict[str, Any], path: Path) -> list[Path]:
    """Write the report to ``path`` and one page per counterexample; returns the pages written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    page_dir = path.parent / f"{path.stem}-traces"
    written: list[Path] = []
    rows = []
    for row in summary["results"]:
        link = ""
        if row.get("trace") and row.get("engine") == "conform":  # a divergent workload, not a model trace
            rel = os.path.relpath(row["trace"], path.parent)
            link = f'<a href="{html.escape(Path(rel).as_posix())}">divergent workload (JSON)</a>'
        elif row.get("trace"):
            trace = traces.load(row["trace"])
            out = page_dir / (Path(row["trace"]).stem + ".html")
            write_text(out, show.page(trace, title=Path(row["trace"]).name))
            written.append(out)
            rel = out.relative_to(path.parent).as_posix()
            link = f'<a href="{html.escape(rel)}">{len(trace["steps"])}-step trace</a>'
        v = row.get("violation") or {}
        where = (
            f"<code>{html.escape(v['invariant'])}</code> at step {v['step'] + 1}: {html.escape(str(v['message']))}"
            if v
            else ""
        )
        if row.get("error"):
            where += f" error: {html.escape(str(row['error']))}"
        outcome = row.get("outcome") or ("pass" if row["verdict"] in GOOD else "violation")
        cls = "ok" if outcome == "pass" else "bad"
        shown = row["verdict"] if outcome in ("pass", "violation") else f"{row['verdict']} ({outcome})"
        rows.append(
            f"<tr><td>{html.escape(row['component'])}</td><td>{html.escape(row['engine'])}</td>"
            f'<td>{html.escape(row["check"])}</td><td class="{cls}">{html.escape(shown)}</td>'
            f'<td class="n">{_effort(row)}</td><td>{where}</td><td>{link}</td></tr>'
        )
    n_ok = sum(1 for r in summary["results"] if r["verdict"] in GOOD)
    n = len(summary["results"])
    ok = bool(summary.get("ok"))
    verdict = str(summary.get("verdict", "pass" if ok else "violation"))
    title = str(summary.get("title", "kvmodel check"))
    text = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)} report</title><style>{STYLE}</style></head><body>\n"
        f"<h1>{html.escape(title)}</h1>\n"
        f"<p>Components: {html.escape(', '.join(summary['components']))}. Engines: "
        f"{html.escape(', '.join(summary['engines']))}. Mode: {html.escape(summary['mode'])}; profile "
        f"{html.escape(str(summary.get('profile')))}; seed {summary.get('seed')}.</p>\n"
        f'<p class="summary {"ok" if ok else "bad"}" id="summary">{n_ok} of {n} checks as expected; verdict '
        f"<b>{html.escape(verdict)}</b>"
        f"{'' if ok else ' — see the rows in red'}. A quirk check is as expected when the faithful model's "
        "counterexample is found; its trace is linked.</p>\n"
        "<table><thead><tr><th>component</th><th>engine</th><th>check</th><th>verdict</th><th>effort</th>"
        "<th>invariant broken</th><th>counterexample</th></tr></thead><tbody>\n"
        + "\n".join(rows)
        + "\n</tbody></table>\n"
        "</body></html>\n"
    )
    write_text(path, text)
    return written


def write_outputs(summary: dict[str, Any], *, html: str | None, junit: str | None, itf: bool) -> list[str]:
    """The extra outputs of ``kvmodel check``: each counterexample in the ITF format beside its
    trace (``itf``), the HTML report and the JUnit XML; returns what to tell the user. Each file is
    written atomically (:func:`kvmodel.jsonio.write_text`); if any of them cannot be written, the
    HTML report and the JUnit file are both removed before the error goes on, so no report of an
    earlier run is left beside this run's error exit."""
    try:
        return _write_outputs(summary, html=html, junit=junit, itf=itf)
    except BaseException:
        for f in (html, junit):
            if f and not Path(f).is_dir():
                with contextlib.suppress(OSError):
                    Path(f).unlink()
        raise


def _write_outputs(summary: dict[str, Any], *, html: str | None, junit: str | None, itf: bool) -> list[str]:
    import json as _json

    from kvmodel import traces

    said = []
    if itf:
        from kvmodel.itf import from_trace

        for row in summary["results"]:
            if row.get("trace") and row["engine"] != "conform":
                p = Path(row["trace"]).with_suffix(".itf.json")
                write_text(p, _json.dumps(from_trace(traces.load(row["trace"])), indent=1, sort_keys=True) + "\n")
                row["itf"] = str(p)
    if junit:
        from kvmodel.junit import junit_xml

        write_text(junit, junit_xml(summary["results"]))
    if html:
        said.append(f"wrote {html} and {len(write(summary, Path(html)))} counterexample page(s)")
    return said


def row_line(row: dict[str, Any]) -> str:
    """One check row as ``kvmodel check`` prints it."""
    head = f"[{row['engine']}] {row['component']:<22} {row['check']:<42} {row['verdict']:<15}"
    tail = ""
    if v := row.get("violation"):
        tail = f"  {v['invariant']} at step {v['step']}: {v['message']}" + (
            f"  -> {row['trace']}" if row.get("trace") else ""
        )
    if row.get("error"):
        tail += f"  error: {row['error']}"
    return f"{head} {row['steps']} steps, {row['seconds']:.2f}s{tail}"
