"""Vector runners for the G1 era: ``native_vllm_block_pool``, ``native_vllm_backend``, ``g1_manager``.

Each step's observables are put in a :class:`~kvmodel.vectors.Namespace` (return value,
counts, prefix hits, the LRU order by hash, the events the step published in the vectors'
``events_new`` notation, what a step evicted) and the step's ``expect`` and
``derived_not_asserted`` are checked against them.
"""

from __future__ import annotations

import re
from typing import Any

from kvmodel.model.blocks import FullBlock, block_from_json
from kvmodel.model.errors import ModelError
from kvmodel.model.events import Removed, Stored
from kvmodel.model.g1.facade import G1Manager
from kvmodel.model.g1.native import Layout, NativeKvManager, Published
from kvmodel.model.g1.pool import NativePool, Reservation
from kvmodel.model.g1.sequence import G1Use, NewActiveSequence, signal_from_json
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
        for i, b in enumerate(blocks):
            out["Stored"][f"blocks[{i}].block_hash"] = b["block_hash"]
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
        backend="native",
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


# --------------------------------------------------------------------------- kvbm_backend

_REPEAT_BODY = re.compile(
    r"signals = (\w+)\.generate\(\); process each; "
    r"if \1\.generated_tokens < \1\.max_output_tokens: \1\.commit_allocation\(\1\.len\(\)\)"
)


def _kvbm_symbol(x: Any, seqs: dict[str, NewActiveSequence]) -> Any:
    """``"S.h[1]"`` / ``"S.plh[0]"`` / ``"S.lh[0]"`` resolved against the named sequences."""
    if isinstance(x, str):
        m = re.fullmatch(r"(\w+)\.(h|lh|plh)\[(\d+)\]", x.strip())
        if m and m.group(1) in seqs:
            s = seqs[m.group(1)]
            tables: dict[str, list[Any]] = {"h": s.seq_hashes, "lh": s.local_hashes, "plh": s.plhs}
            table = tables[m.group(2)]
            v = table[int(m.group(3))]
            if m.group(2) == "plh":
                return {"seq": v[0], "parent": v[1], "pos": v[2]}
            return v
        return x
    if isinstance(x, list):
        return [_kvbm_symbol(e, seqs) for e in x]
    if isinstance(x, dict):
        return {k: _kvbm_symbol(v, seqs) for k, v in x.items()}
    return x


def _kvbm_signals(spec: Any, seqs: dict[str, NewActiveSequence]) -> list[Any]:
    """A signal as JSON, or prose naming a sequence method that yields signals."""
    if isinstance(spec, dict):
        return [signal_from_json(_kvbm_symbol(spec, seqs))]
    text = str(spec).strip()
    m = re.fullmatch(r"(\w+)\.(take_creation_signal|reset_with_signal|prepare_allocation)\((\d*)\)", text)
    if not m or m.group(1) not in seqs:
        raise Uninterpretable(f"cannot read the signal {spec!r}")
    s = seqs[m.group(1)]
    if m.group(2) == "take_creation_signal":
        out: Any = s.take_creation_signal()
    elif m.group(2) == "reset_with_signal":
        out = s.reset_with_signal()
    else:
        out = s.prepare_allocation(int(m.group(3)))
    if out is None:
        return []
    return out if isinstance(out, list) else [out]


def run_kvbm_backend(v: dict[str, Any]) -> None:
    """``kvbm_backend`` vectors: the KVBM ``KvManager`` driven directly (faithful quirks)."""
    from kvmodel.model.g1.kvbm import KvbmDecodeReservation, KvbmDestination, KvbmKvManager, LineageIndex

    c = v["constructor"]
    backend = str(c.get("eviction_backend", "Lineage")).split()[0]
    m = KvbmKvManager(
        c["max_capacity"],
        c["block_size"],
        eviction_backend=backend,
        publishers=_publishers(c),
        dp_rank=c.get("dp_rank", 0),
        quirks=faithful("g1_kvbm"),
    )
    seqs: dict[str, NewActiveSequence] = {}
    reservations: dict[str, Any] = {}
    recorded: dict[str, Any] = {}
    captured: list[Published] = []
    matcher = Matcher()

    def names(plhs: list[Any]) -> list[int]:
        return [m.registered[p].seq_hash for p in plhs if p in m.registered]

    def block_ids() -> dict[str, int]:
        return {str(h): e.block for h, e in sorted(m.active_full.items())}

    def observe(before: dict[str, Any], events: list[Published], expect_keys: list[str]) -> dict[str, Any]:
        vals: dict[str, Any] = {
            "num_active_blocks": m.num_active_blocks(),
            "num_active_block_refs": m.num_active_block_refs(),
            "num_inactive_blocks": m.num_inactive_blocks(),
            "available_blocks": m.sub.available(),
            "inflight_immutable": m.inflight_immutable(),
            "active_partial_len": len(m.active_partial),
            "active_partial_empty": not m.active_partial,
            "active_full_refs": {str(h): e.refs for h, e in sorted(m.active_full.items())},
            "block_ids": block_ids(),
            "available_blocks_unchanged": m.sub.available() == before["available"],
            "block_ids_unchanged": block_ids() == before["block_ids"],
            "events": [event_view(p) for p in events],
            "events_count": len(events),
            "inactive_present": sorted(names(m.sub.inactive.plhs())),
            "registered_blocks": {
                f"plh({p[0]})": {
                    "seq_hash": sh.seq_hash,
                    "block_id": sh.block_id,
                    "local_hash": sh.local_hash,
                    "token_ids": sh.token_ids,
                    "parent_hash": sh.parent_hash,
                }
                for p, sh in m.registered.items()
            },
            "stored_count": sum(1 for p in captured if isinstance(p.event.data, Stored)),
            "removed_count": sum(1 for p in captured if isinstance(p.event.data, Removed)),
            "removed_hashes_total": sum(
                len(p.event.data.block_hashes) for p in captured if isinstance(p.event.data, Removed)
            ),
            **recorded,
        }
        if isinstance(m.sub.inactive, LineageIndex):
            nodes = [n for n in m.sub.inactive.nodes.values() if n.plh is not None]
            vals["inactive_ticks_oldest_first"] = names([n.plh for n in sorted(nodes, key=lambda n: n.tick)])
            lin = m.sub.inactive
            vals["lineage_leaf_queue"] = names([lin.nodes[(pos, f)].plh for _, pos, f in lin.candidates()])
        for h, e in m.active_full.items():
            vals[f"active_full[{h}].block_id"] = e.block
            vals[f"block_id_of_{h}"] = e.block
        for k, e in enumerate(vals["events"]):
            vals[f"events[{k}]"] = e
        for key in expect_keys:
            if mm := re.fullmatch(r"active_full_contains_(\d+)", key):
                vals[key] = int(mm.group(1)) in m.active_full
            elif mm := re.fullmatch(r"(\w+)\.transferable_prompt_tokens\((\d+)\)", key):
                r = reservations.get(mm.group(1))
                if isinstance(r, KvbmDestination):
                    vals[key] = r.transferable_prompt_tokens(int(mm.group(2)))
        vals["events_full"] = vals["events"]
        for name, s in seqs.items():
            vals[name] = _sequence_symbols(name, s)
            for k, h in enumerate(s.seq_hashes):  # symbolic keys: active_full_refs["S.h[0]"]
                if h in m.active_full:
                    vals["active_full_refs"][f"{name}.h[{k}]"] = m.active_full[h].refs
        return vals

    for i, step in enumerate(v["steps"]):
        op, a = step.get("op"), dict(step.get("args") or {})
        expect, derived = step.get("expect") or {}, step.get("derived_not_asserted") or {}
        before = {"available": m.sub.available(), "block_ids": block_ids()}
        vals: dict[str, Any] = {}
        err: ModelError | None = None
        try:
            if op == "new_sequence":
                seqs[a["name"]] = NewActiveSequence(
                    _tokens(a["tokens"]),
                    a.get("max_output_tokens", 0),
                    a.get("block_size", m.block_size),
                    a.get("enable_prefix_caching", True),
                    a.get("emit_token_ids", False),
                    name=a["name"],
                )
            elif op == "process":
                (sig,) = _kvbm_signals(a, seqs)
                vals["returns"] = m.process(sig)
                if isinstance(sig, G1Use):
                    full = [b for b in sig.blocks if isinstance(b, FullBlock)]
                    if len(full) == 1 and full[0].hash in m.active_full:
                        vals["block_id"] = m.active_full[full[0].hash].block
            elif op in ("process_signal", "process_signals"):
                sigs = _kvbm_signals(a.get("signal", a.get("signals")), seqs)
                vals["signal"] = sigs[0].to_json() if len(sigs) == 1 else None
                vals["signals"] = [x.to_json() for x in sigs]
                for x in sigs:
                    vals["returns"] = m.process(x)
            elif op == "repeat":
                mm = _REPEAT_BODY.fullmatch(str(a.get("body", "")).strip())
                if not mm or mm.group(1) not in seqs:
                    raise Uninterpretable(f"step {i}: cannot read the loop body {a.get('body')!r}")
                s = seqs[mm.group(1)]
                per: list[Any] = []
                for _ in range(int(a["times"])):
                    sigs = s.generate()
                    per.append([x.to_json() for x in sigs])
                    for x in sigs:
                        m.process(x)
                    if s.generated_tokens < s.max_output_tokens:
                        s.commit_allocation(len(s))
                vals["signals_per_iteration"] = per
                vals["num_allocated_tokens_after"] = s.num_allocated_tokens
            elif op == "sequence_commit_allocation":
                seqs[a["seq"]].commit_allocation(int(a["tokens"]))
            elif op == "observe":
                pass
            elif op == "clear_captured_events":
                captured.clear()
            elif op == "inspect_events":
                removed = [h for p in captured if isinstance(p.event.data, Removed) for h in p.event.data.block_hashes]
                want = expect.get("removed_hash_in")
                if want is not None:
                    vals["removed_hash_in"] = want if removed and all(h in want for h in removed) else removed
            elif op == "set_capacity_generation":
                m.capacity_generation = int(a["value"])
            elif op == "validate_retry_witness":
                m.validate_retry_witness(
                    a["attempted_generation"], a["retried"], a["witness_generation"], a["released_slots"]
                )
            elif op == "reserve_decode_blocks":
                r = m.reserve_decode_blocks(int(a["count"]))
                vals["returns"] = "CapacityExhausted" if r is None else "Ready"
                if r is not None and "as" in a:
                    reservations[a["as"]] = r
            elif op == "reserve_destination_at":
                s = seqs[a["sequence"]]
                d = m.reserve_destination(s.prepare_allocation(s.num_input_tokens))
                vals["returns"] = "CapacityExhausted" if d is None else "Ready"
                if d is not None:
                    reservations[a["as"]] = d
                    vals["unpublished"] = len(d.unpublished)
            elif op == "activate_destination":
                m.activate_destination(reservations[a["reservation"]])
            elif op == "drop_reservation":
                r = reservations.pop(a["reservation"])
                if isinstance(r, KvbmDecodeReservation):
                    m.release_decode_reservation(r)
                else:
                    m.cancel_destination(r)
            elif op == "get_prefill_cost":
                s = seqs[a["sequence"]]
                cost = m.get_prefill_cost(s.unique, s.plhs, len(s), s.caching)
                vals.update(cost)
                if "cached_tokens_at_least" in expect:
                    want = expect["cached_tokens_at_least"]
                    vals["cached_tokens_at_least"] = want if cost["cached_tokens"] >= want else cost["cached_tokens"]
            elif op == "record":
                pass
            else:
                raise Uninterpretable(f"step {i}: unknown kvbm op {op!r}")
        except ModelError as e:
            err = e
        events = m.drain_events()
        captured.extend(events)
        ns_vals = observe(before, events, [*expect, *derived])
        ns_vals.update(vals)
        ns = Namespace(ns_vals, m.block_size)
        if op == "record":
            for k, path in a.items():
                recorded[k] = ns.resolve(str(path))
                ns_vals[k] = recorded[k]
        try:
            _check_step(step, ns, matcher, err)
        except Mismatch as e:
            raise Mismatch(f"step {i} ({op}): {e}") from None
    final = v.get("derived_not_asserted") or {}
    if final:
        ns_vals = observe({"available": m.sub.available(), "block_ids": block_ids()}, [], list(final))
        for key, val in final.items():
            key2 = key[: -len("_at_end")] if key.endswith("_at_end") else key
            try:
                Namespace(ns_vals, m.block_size).check(key2, val, matcher, strict_text=False)
            except Mismatch as e:
                raise Mismatch(f"after the last step: {e}") from None
