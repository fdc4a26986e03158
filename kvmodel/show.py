"""Counterexample traces for people: a terminal rendering and a self-contained HTML page.

The page has a timeline drawn as inline SVG (no network assets, no scripts): one column per
step with the operation and its arguments, the result or error, the events emitted and the state
after the step (for the KV manager: active blocks with refcounts, the inactive pool in LRU
order, and the router's view — the hashes Stored and not yet Removed, each with its parent).
The step where the trace's invariant breaks is highlighted (class ``violation``, id
``step-N``) and the invariant and its message are shown above the timeline. Same trace,
same bytes.
"""

from __future__ import annotations

import html
import json
from typing import Any

from kvmodel import components, pictures
from kvmodel.pictures import UNREADABLE as _UNREADABLE
from kvmodel.pictures import router_view as _router_view

COL_W, COL_GAP, LINE_H = 236, 16, 15
# The per-component renderings read fields a schema-valid trace need not have (the schema
# leaves recorded observations open): whatever they cannot read is shown as plain JSON.


def _short(v: Any, n: int = 60) -> str:
    try:
        s = v if isinstance(v, str) else json.dumps(v, sort_keys=True, separators=(",", ":"), default=repr)
    except (TypeError, ValueError, RecursionError):
        s = repr(v)
    return s if len(s) <= n else s[: n - 1] + "…"


def _result(obs: dict[str, Any]) -> str:
    try:
        return _result_of(obs)
    except _UNREADABLE:
        return _short(obs, 60)


def _result_of(obs: dict[str, Any]) -> str:
    if "error" in obs:
        return f"error: {obs['error'].get('id', obs['error'])}"
    return f"returns {_short(obs.get('returns'), 40)}"


def _event(e: Any) -> str:
    try:
        return _event_of(e)
    except _UNREADABLE:
        return _short(e, 50)


def _event_of(e: Any) -> str:
    if isinstance(e, dict) and "data" in e and isinstance(e["data"], dict):  # a KvCacheEvent
        d = e["data"]
        if "stored" in d:
            hs = ", ".join(f"#{str(b['block_hash'])[-5:]}" for b in d["stored"]["blocks"])
            p = d["stored"].get("parent_hash")
            return f"Stored([{hs}], parent={'None' if p is None else '#' + str(p)[-5:]})"
        if "removed" in d:
            return "Removed([" + ", ".join(f"#{str(h)[-5:]}" for h in d["removed"]["block_hashes"]) + "])"
    if isinstance(e, dict) and "kind" in e:  # registry
        return f"{e['kind']}({e['sequence_hash']}" + (f", {e['tier']})" if e.get("tier") else ")")
    if isinstance(e, dict) and len(e) == 1:
        ((k, v),) = e.items()
        if isinstance(v, dict) and "blocks" in v:
            parent = f", parent={v['parent_hash']}" if "parent_hash" in v else ""
            return f"{k}({v['blocks']}{parent})"
    return _short(e, 50)


def _block(b: Any) -> str:
    if isinstance(b, dict) and "F" in b:
        return f"F{b['F']}"
    if isinstance(b, dict) and "P" in b:
        return f"P:{b['P']}"
    return _short(b, 20)


def _state_lines(state: Any) -> list[str]:
    """The state after a step, a few short lines (KV manager pools spelled out; others as JSON)."""
    try:
        return _state_lines_of(state)
    except _UNREADABLE:
        return [_short(state, 90)] if state else []


def _state_lines_of(state: Any) -> list[str]:
    if not isinstance(state, dict):
        return []
    if "active" in state and "inactive" in state:
        act = ", ".join(f"{_block(b)}×{rc}" for b, rc in state["active"]) or "—"
        ina = " < ".join(_block(b) for b in state["inactive"]) or "—"
        return [f"active: {act}", f"inactive (LRU first): {ina}"]
    if "registries" in state:  # the block registry
        out = []
        for name, r in state["registries"].items():
            ents = ", ".join(f"{h}{'' if e['live'] else ' (dead)'}" for h, e in r["blocks"].items()) or "—"
            out.append(f"{name}: {ents}" + (f"; pending {r['pending']}" if r["pending"] else ""))
        regs = ", ".join(f"r{k}({v['hash']},{v['tier']})×{v['arcs']}" for k, v in state["registrations"].items())
        out.append(f"handles: {regs or '—'}")
        vals = []
        for n, v in state["values"].items():
            kind = v.get("kind")
            if kind in ("Reset", "Partial", "Complete", "Registered"):
                vals.append(f"{n}={kind}" + (f"(r{v['registration']})" if "registration" in v else ""))
            elif kind == "publisher":
                vals.append(f"{n}=pub{['r' + str(x) for x in v['pending']]}")
            else:
                vals.append(f"{n}={kind}(r{v['registration']})")
        out.append("values: " + (", ".join(vals) or "—"))
        return out
    if "pool" in state and "tables" in state:  # the G1 manager (native backend)
        pool = state["pool"]
        cps = ", ".join(
            f"c{i}:private"
            if c.get("private")
            else f"c{i}:#{str(c['hash'])[-5:]}×{c['refs']}" + (f"+{c['pins']}p" if c["pins"] else "")
            for i, c in pool["copies"].items()
        )
        lru = " < ".join(f"#{str(h)[-5:]}" for h in pool["lru"])
        tabs = "; ".join(
            f"r{o}: " + " ".join(f"P:{e['P']}" if "P" in e else f"#{str(e['F'])[-5:]}" for e in t)
            for o, t in state["tables"].items()
        )
        out = [
            f"copies: {cps or '—'}" + (f"; reserved {pool['reserved']}" if pool["reserved"] else ""),
            f"LRU (oldest first): {lru or '—'}",
            f"tables: {tabs or '—'}",
        ]
        return out
    if "order" in state:
        return [f"LRU order: {' < '.join(map(str, state['order'])) or '—'}"]
    return [_short({k: v for k, v in state.items() if v}, 90)]


def _steps(trace: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    view: dict[int, int | None] = {}
    comp = trace.get("component")
    stream = isinstance(comp, str) and any(c.router_stream for c in components.registered() if comp in c.names)
    for s in trace["steps"]:
        obs = s.get("observe") or {}
        state = _state_lines(obs.get("state"))
        if stream:
            _router_view(view, obs.get("events") or [])
            shown = ", ".join(f"{h}" if p is None else f"{h}←{p}" for h, p in sorted(view.items()))
            state.append(f"router view: {shown or '—'}")
        out.append(
            {
                "call": f"{s['op']} {_short(s.get('args'), 80)}",
                "result": _result(obs),
                "events": [_event(e) for e in obs.get("events") or []],
                "state": state,
            }
        )
    return out


def marked(trace: dict[str, Any]) -> dict[str, Any]:
    """The step to highlight: where an implementation checked with
    :func:`kvmodel.api.check_implementation` diverged from the model (``origin.divergence``: the
    point of a conformance trace, even when a known quirk of the faithful model broke an
    invariant earlier, which stays recorded as the trace's ``violation``), else the violated
    invariant."""
    d = (trace.get("origin") or {}).get("divergence")
    if not isinstance(d, dict) or not isinstance(d.get("step"), int):
        return dict(trace["violation"]) if trace.get("violation") else {}
    impl = str(trace["origin"].get("implementation", "the implementation"))
    if d.get("what") == "invariant" and isinstance(d.get("model"), dict):  # invariant mode
        return {
            "invariant": f"{d['model'].get('invariant')} (broken by {impl})",
            "step": d["step"],
            "message": _short(d.get("implementation"), 400),
        }
    return {
        "invariant": f"conformance of {impl}",
        "step": d["step"],
        "message": f"{d.get('what', 'observations')} differ — model {_short(d.get('model'), 200)}, implementation "
        f"{_short(d.get('implementation'), 200)}",
    }


def terminal(trace: dict[str, Any]) -> str:
    v = marked(trace)
    quirks = ", ".join(trace["quirks"]) or "none (ideal)"
    lines = [f"{trace['component']} — quirks: {quirks}; config {_short(trace['config'])}"]
    for i, s in enumerate(_steps(trace)):
        lines.append(f"{i + 1}. {s['call']} → {s['result']}; events: {', '.join(s['events']) or 'none'}")
        lines += [f"   {x}" for x in s["state"]]
        if v and v.get("step") == i:
            lines.append(f"   ✗ {v['invariant']}: {v['message']}")
    if not v:
        lines.append("no invariant violated")
    return "\n".join(lines) + "\n"


def _wrap(text: str, width: int = 30) -> list[str]:
    out, cur = [], ""
    for word in text.split(" "):
        while len(word) > width:
            if cur:
                out.append(cur)
                cur = ""
            out.append(word[:width])
            word = word[width:]
        if len(cur) + len(word) + (1 if cur else 0) > width:
            out.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    if cur:
        out.append(cur)
    return out


def _svg(trace: dict[str, Any]) -> str:
    steps = _steps(trace)
    v = marked(trace)
    cols: list[list[tuple[str, str]]] = []
    for s in steps:
        rows = [(x, "op") for x in _wrap(s["call"])] + [(x, "res") for x in _wrap(s["result"])]
        rows += [(x, "ev") for e in s["events"] for x in _wrap("⇢ " + e)] or [("no events", "muted")]
        rows += [(x, "st") for line in s["state"] for x in _wrap(line)]
        cols.append(rows)
    height = 40 + LINE_H * max((len(c) for c in cols), default=1) + 20
    width = max(1, len(cols)) * (COL_W + COL_GAP) + COL_GAP
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="trace timeline">'
    ]
    for i, rows in enumerate(cols):
        x = COL_GAP + i * (COL_W + COL_GAP)
        bad = v.get("step") == i
        cls = "col violation" if bad else "col"
        parts.append(f'<g id="step-{i}" class="{cls}">')
        parts.append(f'<rect x="{x}" y="8" width="{COL_W}" height="{height - 16}" rx="6"/>')
        parts.append(f'<text x="{x + 8}" y="28" class="head">step {i + 1}{" ✗" if bad else ""}</text>')
        for k, (text, kind) in enumerate(rows):
            y = 48 + k * LINE_H
            parts.append(f'<text x="{x + 8}" y="{y}" class="{kind}">{html.escape(text)}</text>')
        parts.append("</g>")
        if i:
            parts.append(f'<line x1="{x - COL_GAP}" y1="20" x2="{x}" y2="20" class="arrow"/>')
    parts.append("</svg>")
    return "\n".join(parts)


STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px} .muted{fill:#999} code{background:#f3f3f3;padding:1px 4px}
.col rect{fill:#fafafa;stroke:#bbb} .col.violation rect{fill:#fff0f0;stroke:#d33;stroke-width:2}
text{font:12px monospace} .head{font-weight:bold} .op{fill:#124} .res{fill:#555} .ev{fill:#063}
.st{fill:#534} .arrow{stroke:#bbb} .violation-box{border-left:4px solid #d33;padding:4px 12px;background:#fff0f0}
.timeline{overflow-x:auto;border:1px solid #eee;padding:4px}
"""


def page(trace: dict[str, Any], title: str = "kvmodel trace") -> str:
    v = marked(trace)
    comp = trace.get("component")
    stream = isinstance(comp, str) and any(c.router_stream for c in components.registered() if comp in c.names)
    head = (
        f'<p class="violation-box">Invariant <code>{html.escape(v["invariant"])}</code> breaks at step '
        f"{v['step'] + 1}: {html.escape(v['message'])}</p>"
        if v
        else "<p>No invariant is violated in this trace.</p>"
    )
    quirks = ", ".join(trace["quirks"]) or "none (ideal model)"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}{pictures.STYLE}</style></head><body>\n"
        f"<h1>{html.escape(trace['component'])}: {len(trace['steps'])} step(s)</h1>\n"
        f"<p>Quirks: {html.escape(quirks)}. "
        f"Configuration: <code>{html.escape(_short(trace['config'], 200))}</code></p>\n"
        f"{head}\n{pictures.side_by_side(trace)}\n"
        f'<div class="timeline">\n{_svg(trace)}\n</div>\n'
        f"{pictures.pools(trace, v, stream)}\n"
        "<p>Re-run with <code>kvmodel replay TRACE</code>.</p>\n</body></html>\n"
    )


def replay_lines(trace: dict[str, Any], res: Any, source: str) -> list[str]:
    """What ``kvmodel replay`` says after the timeline: the divergence, the violation, whether the
    recorded violation reproduced, and the verdict."""
    lines = [
        f"{source}: {trace['component']} with quirks {trace['quirks'] or 'none (ideal)'}: "
        f"replayed {res.steps_run} of {len(trace['steps'])} steps",
    ]
    d = (trace.get("origin") or {}).get("divergence")
    if isinstance(d, dict) and isinstance(d.get("step"), int):  # a conformance trace: its point first
        m = marked(trace)
        lines.append(f"the implementation diverged from the model at step {d['step']}: {m.get('message', '')}")
        if trace.get("violation"):
            v = trace["violation"]
            lines.append(f"(the model's own known violation of {v['invariant']} at step {v['step']} is recorded too)")
    lines.append(f"DIVERGENCE at {res.divergence}" if res.divergence else "every recorded observation reproduced")
    if len(res.divergences) > 1:
        lines.append(f"{len(res.divergences)} divergences in all:")
        lines += [f"  step {d['step']} {d['op']}: {d['detail']}" for d in res.divergences]
    rv, v = res.recorded_violation, res.violation
    if v:
        lines.append(f"VIOLATION of {v['invariant']} at step {v['step']}: {v['message']}")
    if rv and res.reproduces_recorded:
        lines.append(f"the recorded violation of {rv['invariant']} at step {rv['step']} is reproduced")
    elif rv and not res.divergence:
        lines.append(f"the recorded violation of {rv['invariant']} at step {rv['step']} did NOT reproduce")
    lines.append(f"verdict: {res.verdict}")
    return lines
