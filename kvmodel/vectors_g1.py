"""Vector runners for the G1 era: ``native_vllm_block_pool``, ``native_vllm_backend``, ``g1_manager``.

Each step's observables are put in a :class:`~kvmodel.vectors.Namespace` (return value,
counts, prefix hits, the LRU order by hash, the events the step published in the vectors'
``events_new`` notation, what a step evicted) and the step's ``expect`` and
``derived_not_asserted`` are checked against them.
"""

from __future__ import annotations

import re
from typing import Any

from kvmodel.model.blocks import block_from_json
from kvmodel.model.errors import ModelError
from kvmodel.model.events import Removed, Stored
from kvmodel.model.g1.facade import G1Manager
from kvmodel.model.g1.native import Layout, NativeKvManager, Published
from kvmodel.model.g1.pool import NativePool, Reservation
from kvmodel.model.g1.sequence import NewActiveSequence, signal_from_json
from kvmodel.model.quirks import faithful
from kvmodel.vectors import Matcher, Mismatch, Namespace, Uninterpretable, _check_step, _tokens


def event_view(p: Published) -> dict[str, Any]:
    """An event in the vectors' ``events_new`` notation (plus flattened ``blocks``/``parent_hash``)."""
    e = p.event
    out: dict[str, Any] = {"event_id": e.event_id, "dp_rank": e.dp_rank}
    if p.block_token_ids is not None:
        out["block_token_ids"] = p.block_token_ids
    if isinstance(e.data, Stored):
        blocks = [{"block_hash": b.block_hash, "tokens_hash": b.tokens_hash} for b in e.data.blocks]
        out["Stored"] = {"parent_hash": e.data.parent_hash, "blocks": blocks, "num_blocks": len(blocks)}
        out["blocks"], out["parent_hash"] = blocks, e.data.parent_hash
    elif isinstance(e.data, Removed):
        out["Removed"] = {"block_hashes": list(e.data.block_hashes)}
    return out


def run_native_pool(v: dict[str, Any]) -> None:
    """``native_vllm_block_pool`` vectors: the pool driven directly, reservations and copies by name."""
    pool = NativePool(v["constructor"]["capacity"], faithful("g1_native"))
    res: dict[str, Reservation] = {}
    copies: dict[str, int] = {}
    matcher = Matcher()
    for i, step in enumerate(v["steps"]):
        op, a = step.get("op"), dict(step.get("args") or {})
        vals: dict[str, Any] = {}
        err: ModelError | None = None
        try:
            if op in ("reserve", "reserve_resident_prefix"):
                out = (
                    pool.reserve(a["prefix"], a["fresh"])
                    if op == "reserve"
                    else pool.reserve_resident_prefix(a["candidates"], a["total"])
                )
                vals["returns"] = None if out is None else "reservation"
                vals["removed"] = [] if out is None else out.removed
                if out is not None:
                    res[a["as"]] = out.reservation
            elif op == "allocate_private":
                copies[a["as"]] = pool.allocate_private(res[a["reservation"]])
            elif op == "cache_private":
                vals["returns"] = pool.cache_private(copies[a["copy"]], a["hash"])
            elif op == "release":
                pool.release(copies[a["copy"]])
            elif op == "cancel":
                pool.cancel(res[a["reservation"]])
            elif op == "prefix_hit":
                hit = pool.prefix_hit(a["hash"])
                vals["is_some"] = hit is not None
                vals["is_active"] = bool(hit)
            elif op not in ("num_active", "num_inactive", "counts"):
                raise Uninterpretable(f"step {i}: unknown pool op {op!r}")
        except ModelError as e:
            err = e
        vals.update(num_active=pool.num_active(), num_inactive=pool.num_inactive(), lru_oldest_first=pool.lru_hashes())
        if op in ("num_active", "num_inactive"):
            vals["returns"] = vals[op]
        try:
            _check_step(step, Namespace(vals), matcher, err)
        except Mismatch as e:
            raise Mismatch(f"step {i} ({op}): {e}") from None


def _layout(a: dict[str, Any]) -> Layout:
    return Layout(
        [block_from_json(b) for b in a["blocks"]],
        list(a.get("local_hashes") or []),
        a.get("token_ids"),
        None if a.get("parent") is None else block_from_json(a["parent"]),
    )


def _publishers(c: dict[str, Any]) -> bool:
    return "none" not in str(c.get("publishers", "none")).lower()


def _common_values(m: NativeKvManager, before: dict[str, Any], events: list[Published]) -> dict[str, Any]:
    vals: dict[str, Any] = {
        "num_active_blocks": m.num_active_blocks(),
        "num_inactive_blocks": m.num_inactive_blocks(),
        "num_active_block_refs": m.num_active_block_refs(),
        "inactive_lru_oldest_first": m.pool.lru_hashes(),
        "events": [event_view(p) for p in events],
        "events_count": len(events),
        "evicted": sorted(before["visible"] - m.pool.visible()),
        "prefix_hit": {str(h): m.prefix_hit(h) is not None for h in sorted(before["visible"] | m.pool.visible())},
        "state_unchanged": m.snapshot() == before["snapshot"],
    }
    for o in before["owners"]:
        vals[f"table_of_owner_{o}"] = "deleted" if o not in m.tables else "present"
    for k, e in enumerate(vals["events"]):
        vals[f"events[{k}]"] = e
    return vals


def run_native_backend(v: dict[str, Any]) -> None:
    """``native_vllm_backend`` vectors: ``VllmKvManager`` driven directly (owners are request ids)."""
    c = v["constructor"]
    m = NativeKvManager(
        c["max_capacity"],
        c["block_size"],
        enable_prefix_caching=c.get("enable_prefix_caching", True),
        publishers=_publishers(c),
        dp_rank=c.get("dp_rank", 0),
        quirks=faithful("g1_native"),
    )
    matcher = Matcher()
    for i, step in enumerate(v["steps"]):
        op, a = step.get("op"), dict(step.get("args") or {})
        before = {"visible": m.pool.visible(), "snapshot": m.snapshot(), "owners": sorted(m.tables)}
        vals: dict[str, Any] = {}
        err: ModelError | None = None
        try:
            if op == "use_for_request":
                st, n = m.use_for_request(a["owner"], _layout(a), a.get("reusable_prefix_blocks", 0))
                vals["returns"] = f"Ready({n})" if st == "Ready" else st
            elif op == "finalize_computed_prefix":
                vals["visited_positions"] = m.finalize_computed_prefix(
                    a["owner"], a["computed_before"], a["computed_after"]
                )
                vals["became_visible"] = bool(m.pool.visible() - set(before["visible"]))
            elif op == "deref_for_request":
                m.deref_for_request(a["owner"], [block_from_json(b) for b in a["blocks"]])
            elif op == "promote_for_request":
                m.promote_for_request(
                    a["owner"], a["uuid"], a["hash"], a.get("parent"), a.get("local_hash"), a.get("token_ids")
                )
            elif op == "prefix_hit":
                hit = m.prefix_hit(a["hash"])
                vals["is_some"] = hit is not None
                vals["is_active"] = bool(hit)
            elif op not in ("counts", "num_active_blocks", "num_inactive_blocks", "num_active_block_refs"):
                raise Uninterpretable(f"step {i}: unknown native op {op!r}")
        except ModelError as e:
            err = e
        events = m.drain_events()
        vals.update(_common_values(m, before, events))
        vals.setdefault("became_visible", False)
        if op in ("num_active_blocks", "num_inactive_blocks", "num_active_block_refs"):
            vals["returns"] = vals[op]
        try:
            _check_step(step, Namespace(vals, m.block_size), matcher, err)
        except Mismatch as e:
            raise Mismatch(f"step {i} ({op}): {e}") from None


def _sequence_symbols(name: str, s: NewActiveSequence) -> dict[str, Any]:
    return {"h": list(s.seq_hashes), "lh": list(s.local_hashes), "plh": list(s.plhs)}


def _signal(spec: Any, seqs: dict[str, NewActiveSequence]) -> Any:
    """A signal given as JSON, or as ``S.take_creation_signal() = ...`` prose naming a sequence."""
    if isinstance(spec, dict):
        return signal_from_json(spec)
    mm = re.match(r"\s*(\w+)\.take_creation_signal\(\)", str(spec))
    if mm and mm.group(1) in seqs:
        sig = seqs[mm.group(1)].take_creation_signal()
        if sig is None:
            raise Uninterpretable(f"{spec!r}: no creation signal")
        return sig
    raise Uninterpretable(f"cannot read the signal {spec!r}")


def run_g1_manager(v: dict[str, Any]) -> None:
    """``g1_manager`` vectors: the facade with the native backend, and named sequences."""
    c = v["constructor"]
    if str(c.get("backend", "Native")).lower() != "native":
        raise Uninterpretable("the KVBM backend is not modelled yet (its own issue)")
    g = G1Manager(
        c["max_capacity"],
        c["block_size"],
        enable_prefix_caching=c.get("enable_prefix_caching", True),
        publishers=_publishers(c),
        dp_rank=c.get("dp_rank", 0),
        quirks=faithful("g1_native") - {"promote_tail_before_finalize"},  # revision R05
    )
    seqs: dict[str, NewActiveSequence] = {}
    matcher = Matcher()
    for i, step in enumerate(v["steps"]):
        op, a = step.get("op"), dict(step.get("args") or {})
        m = g.native
        before = {"visible": m.pool.visible(), "snapshot": m.snapshot(), "owners": sorted(m.tables)}
        vals: dict[str, Any] = {}
        err: ModelError | None = None
        try:
            if op == "new_sequence":
                seqs[a["name"]] = NewActiveSequence(
                    _tokens(a["tokens"]),
                    a.get("max_output_tokens", 0),
                    a.get("block_size", g.block_size),
                    a.get("enable_prefix_caching", True),
                    a.get("emit_token_ids", False),
                    name=a["name"],
                )
            elif op == "process_for_request":
                vals["returns"] = g.process_for_request(
                    a["owner"], _signal(a["event"], seqs), a.get("reusable_prefix_blocks", 0)
                )
            elif op == "sequence_push":
                out = seqs[a["seq"]].push(int(a["token"]))
                vals["returns"] = None if out is None else [s.to_json() for s in out]
            elif op == "finalize_computed_prefix":
                seq = seqs[a["sequence"]] if "sequence" in a else None
                if seq is None:
                    m.finalize_computed_prefix(a["owner"], a["computed_before"], a["computed_after"])
                else:
                    g.finalize_computed_prefix(a["owner"], a["computed_before"], a["computed_after"], seq)
            elif op not in ("counts",):
                raise Uninterpretable(f"step {i}: unknown g1 op {op!r}")
        except ModelError as e:
            err = e
        events = g.drain_events()
        vals.update(_common_values(m, before, events))
        for name, s in seqs.items():
            vals[name] = _sequence_symbols(name, s)
        try:
            _check_step(step, Namespace(vals, g.block_size), matcher, err)
        except Mismatch as e:
            raise Mismatch(f"step {i} ({op}): {e}") from None
