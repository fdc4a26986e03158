"""The pools of a trace drawn step by step, for the HTML page of ``kvmodel show`` (``show.page``).

Each step's state becomes a row of cells: for the pools with a capacity (the KV manager, the G1
manager with either backend) one cell per slot — active blocks with their reference count,
inactive blocks in eviction order (oldest first, numbered), free slots — then the router's view
where the component's events are the router's stream; for the LRU evictor the objects in
eviction order; for the block registry each registry's entries (live or dead), the registration
handles with their Arc counts and the caller's values. The blocks that the violated invariant or
the divergence names (in the step's arguments, its events, the message) are outlined in red, and
the marked step's row is outlined.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

STYLE = """
.pools{margin-top:16px} .pools h2{font-size:16px}
.pool{display:flex;flex-wrap:wrap;align-items:center;gap:4px;padding:6px;border:1px solid #eee;margin:4px 0}
.pool.marked{border:2px solid #d33;background:#fff8f8}
.pool .label{width:90px;font:12px monospace;color:#555}
.cell{display:inline-block;min-width:56px;padding:6px 4px;border-radius:4px;text-align:center;font:12px monospace;
border:2px solid transparent}
.cell.active{background:#3a7bd5;color:#fff} .cell.inactive{background:#f0b429;color:#222}
.cell.free{background:#e8e8e8;color:#888} .cell.view{background:#5cb85c;color:#fff}
.cell.dead{background:#bbb;color:#333} .cell.value{background:#8e6cc4;color:#fff}
.cell.named{border-color:#d33;box-shadow:0 0 0 2px #d33}
.side{border-collapse:collapse;margin:8px 0} .side td,.side th{border:1px solid #ccc;padding:4px 8px;
vertical-align:top;font:12px monospace;white-space:pre-wrap;max-width:520px}
.side th{background:#f3f3f3} .side td.differs{background:#fff0f0}
"""


def _blk(b: Any) -> str:
    if isinstance(b, dict) and "F" in b:
        return f"F{b['F']}"
    if isinstance(b, dict) and "P" in b:
        return f"P:{b['P']}"
    return str(b)


def named(trace: dict[str, Any], step: int | None, extra: Any = None) -> set[str]:
    """Cell keys the marked step names: blocks in its arguments, hashes in its events and in the
    divergence's or violation's values."""
    if step is None or not 0 <= step < len(trace["steps"]):
        return set()
    s = trace["steps"][step]
    text = json.dumps([s.get("args"), (s.get("observe") or {}).get("events"), extra], default=str)
    out = {f"F{h}" for h in re.findall(r'"F":\s*(\d+)', text)}
    out |= {f"P:{p}" for p in re.findall(r'"P":\s*"([^"]+)"', text)}
    for key in ("blocks", "block_hashes"):
        for group in re.findall(rf'"{key}":\s*\[([^\]]*)\]', text):
            out |= {f"F{h}" for h in re.findall(r"\d+", group)}
    out |= {f"F{h}" for h in re.findall(r'"(?:sequence_hash|block_hash|hash|parent_hash)":\s*(\d+)', text)}
    return out


def _cell(cls: str, key: str, label: str, hot: set[str]) -> str:
    c = f"cell {cls}" + (" named" if key in hot else "")
    return f'<span class="{c}" data-key="{html.escape(key)}">{html.escape(label)}</span>'


def _kv(state: dict[str, Any], cap: int, hot: set[str]) -> list[str]:
    cells = [_cell("active", _blk(b), f"{_blk(b)}×{rc}", hot) for b, rc in state["active"]]
    cells += [_cell("inactive", _blk(b), f"{_blk(b)} #{i + 1}", hot) for i, b in enumerate(state["inactive"])]
    return cells + _free(cap - len(cells), "free")


# at most this many cells of one kind of empty slot are drawn (a capacity is a number in the trace)
MAX_EMPTY_CELLS = 64


def _free(n: int, label: str) -> list[str]:
    """``n`` empty slots: one cell each, or (more than ``MAX_EMPTY_CELLS``) one cell counting them."""
    if n <= 0:
        return []
    if n > MAX_EMPTY_CELLS:
        return [_cell("free", "", f"{label} ×{n}", set())]
    return [_cell("free", "", label, set())] * n


def _g1_native(state: dict[str, Any], hot: set[str]) -> list[str]:
    pool = state["pool"]
    lru = {h: i for i, h in enumerate(pool["lru"])}
    cells = []
    for i, c in pool["copies"].items():
        if c.get("private"):
            cells.append(_cell("active", f"c{i}", f"c{i} private", hot))
            continue
        key, short = f"F{c['hash']}", f"#{str(c['hash'])[-5:]}"
        if c["refs"] or c["pins"]:
            cells.append(_cell("active", key, f"{short}×{c['refs']}" + (f"+{c['pins']}p" if c["pins"] else ""), hot))
        else:
            cells.append(_cell("inactive", key, f"{short} #{lru.get(c['hash'], 0) + 1}", hot))
    copies, reserved = len(cells), int(pool.get("reserved", 0))
    return cells + _free(reserved, "reserved") + _free(int(pool["capacity"]) - copies - reserved, "free")


def _g1_kvbm(state: dict[str, Any], hot: set[str]) -> list[str]:
    cells = []
    for h, v in sorted(state.get("active_full", {}).items(), key=lambda kv: str(kv[0])):
        refs = v.get("refs", v) if isinstance(v, dict) else v
        cells.append(_cell("active", f"F{h}", f"#{str(h)[-5:]}×{refs}", hot))
    for u in state.get("active_partial", {}):
        cells.append(_cell("active", f"P:{u}", f"P:{u}", hot))
    for i, e in enumerate(state.get("inactive", [])):
        h = e.get("hash", e) if isinstance(e, dict) else e
        cells.append(_cell("inactive", f"F{h}", f"#{str(h)[-5:]} #{i + 1}", hot))
    cells += [_cell("free", "", f"free {b}", set()) for b in state.get("free", [])]
    return cells


def _registry(state: dict[str, Any], hot: set[str]) -> list[tuple[str, list[str]]]:
    rows = []
    for name, r in state["registries"].items():
        cells = [
            _cell("active" if e["live"] else "dead", f"F{h}", f"{h}" + ("" if e["live"] else " dead"), hot)
            for h, e in r["blocks"].items()
        ]
        cells += [_cell("inactive", f"F{h}", f"pending {h}", hot) for h in r["pending"]]
        rows.append((name, cells))
    regs = [
        _cell("view", f"F{v['hash']}", f"r{k} {v['hash']}×{v['arcs']}", hot) for k, v in state["registrations"].items()
    ]
    rows.append(("handles", regs))
    vals = [_cell("value", n, f"{n}={v.get('kind')}", hot) for n, v in state["values"].items()]
    rows.append(("values", vals))
    return rows


# what reading a recorded value of another shape than the model records raises
UNREADABLE = (KeyError, TypeError, AttributeError, ValueError, IndexError)


def router_view(view: dict[int, int | None], events: list[Any]) -> None:
    """What a router consuming the KV manager's Store/Remove stream holds (Stored minus Removed,
    with each hash's announced parent), updated in place."""
    try:
        _apply_view(view, events)
    except UNREADABLE:
        pass


def _apply_view(view: dict[int, int | None], events: list[Any]) -> None:
    for e in events:
        if isinstance(e, dict) and "Store" in e:
            parent = e["Store"].get("parent_hash")
            for h in e["Store"]["blocks"]:
                if not isinstance(h, int) or isinstance(h, bool):  # damaged: no hash (the view orders hashes)
                    continue
                view[h] = parent
                parent = h
        elif isinstance(e, dict) and "Remove" in e:
            for h in e["Remove"]["blocks"]:
                view.pop(h, None)


def _rows(state: Any, config: Any, hot: set[str]) -> list[tuple[str, list[str]]]:
    """The rows of one recorded state; a state (or configuration) of another shape than the
    model records — a hand-edited or damaged trace — is drawn as one row saying so, as the
    terminal view shows such values as they are (``UNREADABLE``)."""
    if not isinstance(state, dict):
        return []
    try:
        return _drawn(state, config if isinstance(config, dict) else {}, hot)
    except (*UNREADABLE, OverflowError):
        return [("state", [_cell("dead", "", "the recorded state has an unexpected shape", set())])]


def _drawn(state: dict[str, Any], config: dict[str, Any], hot: set[str]) -> list[tuple[str, list[str]]]:
    if "active" in state and "inactive" in state and "all_blocks" in state:
        return [("pool", _kv(state, int(config.get("max_capacity", 0)), hot))]
    if "pool" in state and "tables" in state:
        return [("pool", _g1_native(state, hot))]
    if "free" in state and "active_full" in state:
        return [("pool", _g1_kvbm(state, hot))]
    if "registries" in state:
        return _registry(state, hot)
    if "order" in state:
        return [("LRU", [_cell("inactive", str(o), f"{o} #{i + 1}", hot) for i, o in enumerate(state["order"])])]
    return []


def _view(view: dict[int, int | None], hot: set[str]) -> list[str]:
    return [_cell("view", f"F{h}", f"{h}" if p is None else f"{h}←{p}", hot) for h, p in sorted(view.items())]


def pools(trace: dict[str, Any], marked: dict[str, Any], router_stream: bool) -> str:
    """The pools section of the page: one block per step (``id="pool-STEP"``)."""
    step = marked.get("step") if marked else None
    d = (trace.get("origin") or {}).get("divergence") or {}
    hot = named(trace, step, [marked.get("message") if marked else None, d.get("model"), d.get("implementation")])
    out = ['<section class="pools"><h2>Pools, step by step</h2>']
    view: dict[int, int | None] = {}
    drew = False
    for i, s in enumerate(trace["steps"]):
        obs = s.get("observe") or {}
        rows = _rows(obs.get("state"), trace.get("config") or {}, hot if i == step else set())
        if router_stream:
            router_view(view, obs.get("events") or [])
            rows.append(("router view", _view(view, hot if i == step else set())))
        if not rows:
            continue
        drew = True
        cls = "pool-step marked" if i == step else "pool-step"
        out.append(f'<div id="pool-{i}" class="{cls}"><b>step {i + 1}</b> {html.escape(str(s["op"]))}')
        for label, cells in rows:
            inner = "".join(cells) or '<span class="cell free">—</span>'
            out.append(
                f'<div class="pool{" marked" if i == step else ""}"><span class="label">{html.escape(label)}</span>'
                f"{inner}</div>"
            )
        out.append("</div>")
    out.append("</section>")
    return "\n".join(out) if drew else ""


def _obs_text(v: Any) -> str:
    return json.dumps(v, indent=1, sort_keys=True, default=str)[:4000]


def side_by_side(trace: dict[str, Any]) -> str:
    """For a divergence: the model's and the implementation's observations at the divergent step."""
    d = (trace.get("origin") or {}).get("divergence")
    if not isinstance(d, dict) or not isinstance(d.get("step"), int) or not 0 <= d["step"] < len(trace["steps"]):
        return ""
    s = trace["steps"][d["step"]]
    obs = s.get("observe") or {}
    model_obs = {k: obs[k] for k in ("returns", "error", "events") if k in obs}
    what = str(d.get("what", "observation"))
    return (
        f'<table class="side" id="divergence"><caption>Step {d["step"] + 1}: <code>{html.escape(str(s["op"]))} '
        f"{html.escape(json.dumps(s.get('args'), sort_keys=True)[:300])}</code> — {html.escape(what)} differ"
        "</caption><tr><th></th><th>model</th><th>implementation</th></tr>"
        f'<tr><th>{html.escape(what)}</th><td class="differs">{html.escape(_obs_text(d.get("model")))}</td>'
        f'<td class="differs">{html.escape(_obs_text(d.get("implementation")))}</td></tr>'
        f"<tr><th>the model's whole observation</th><td>{html.escape(_obs_text(model_obs))}</td><td></td></tr>"
        "</table>"
    )
