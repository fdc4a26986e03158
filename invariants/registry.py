"""Invariants of the KVBM block registry (semantics §3.7) and its Register/Remove stream.

The monitor keeps, per registration handle, how many ``Register`` and ``Remove`` events the
event manager received for it (the stream's ghost), and the faults of the latest step.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import attrs

from kvmodel.invariants.core import Invariant, MonitorFault, StepContext, Witness
from kvmodel.model.registry import BlockState, Publisher, PublishHandle, RegEvent, RegistryWorld

C = "kvbm_block_registry"


class RegMonitor:
    """Ghost bookkeeping over the event-manager messages of a registry run."""

    def __init__(self) -> None:
        self.registers: Counter[int] = Counter()
        self.removes: Counter[int] = Counter()
        self.faults: dict[str, str] = {}

    def copy(self) -> RegMonitor:
        m = RegMonitor()
        m.registers, m.removes = Counter(self.registers), Counter(self.removes)
        return m

    def key(self, live: set[int]) -> tuple[Any, ...]:
        """Only live handles' history can still matter (a dead handle gets no more events)."""
        return tuple(sorted((r, self.registers[r]) for r in live if self.registers[r]))

    def forget(self, keep: set[int]) -> None:
        for c in (self.registers, self.removes):
            for r in [r for r in c if r not in keep]:
                del c[r]

    def observe(self, model: RegistryWorld, events: list[RegEvent]) -> None:
        self.faults = {}
        for e in events:
            h = model.handles.get(e.handle)
            if e.kind == "Register":
                if self.registers[e.handle]:
                    self.faults["reg.register_at_most_once"] = f"second Register for handle {e.handle} ({e.text()})"
                if h is not None and not h.registered:
                    self.faults.setdefault(
                        "reg.register_only_registered", f"{e.text()} for a handle no registration created"
                    )
                self.registers[e.handle] += 1
            else:
                if not self.registers[e.handle]:
                    self.faults["reg.remove_after_register"] = f"{e.text()} for handle {e.handle}, never Registered"
                if self.removes[e.handle]:
                    self.faults["reg.one_remove_per_handle"] = f"second Remove for handle {e.handle} ({e.text()})"
                self.removes[e.handle] += 1


@attrs.define
class Before:
    """The registry around a step: its entry count before it, whether a ``register_block``
    names a hash its pool holds as pending, and the state key after the step (the rejection
    invariant compares it with the key before)."""

    entries: int
    pending_hit: bool = False
    post_key: Any = None


def _holders(m: RegistryWorld, publications_only: bool = False) -> Counter[int]:
    """Arcs per registration handle, counted from the values that hold them; with
    ``publications_only``, only pending publications (armed publish handles, publisher entries)."""
    out: Counter[int] = Counter()
    for v in m.values.values():
        if isinstance(v, PublishHandle):
            if v.armed or not publications_only:
                out[v.reg] += 1
        elif isinstance(v, Publisher):
            out.update(v.handles)
        elif publications_only:
            continue
        elif isinstance(v, BlockState):
            if v.reg is not None:
                out[v.reg] += 1
        else:
            out[v] += 1
    return out


def _one_block_handle(c: StepContext) -> str | None:
    m: RegistryWorld = c.model
    for p in sorted(m.pools):
        for h, ids in sorted(m.live_block_handles(p).items()):
            if len(ids) > 1:
                return f"registry {p!r} holds {len(ids)} live block handles for hash {h}"
    return None


def _one_registration(c: StepContext) -> str | None:
    m: RegistryWorld = c.model
    seen: dict[tuple[str, int, str], int] = {}
    for h in sorted(m.handles.values(), key=lambda x: x.id):
        if h.alive and h.registered:
            k = (h.scope, h.block.sequence_hash, h.tier)
            if k in seen:
                return f"two live registration handles ({seen[k]} and {h.id}) for hash {k[1]} at tier {k[2]}"
            seen[k] = h.id
    return None


def _lists_iff_live(c: StepContext) -> str | None:
    m: RegistryWorld = c.model
    for p in sorted(m.pools):
        live = m.live_block_handles(p)
        for h in sorted(set(live) | set(m.pools[p].blocks)):
            listed = m.is_registered(p, h)
            if listed != (h in live):
                what = "lists" if listed else "does not list"
                return f"registry {p!r} {what} hash {h} but holds {len(live.get(h, []))} live block handles for it"
    return None


def _no_dead_after_drain(c: StepContext) -> str | None:
    m: RegistryWorld = c.model
    if any(p.pending for p in m.pools.values()):
        return None
    for p in sorted(m.pools):
        for h, b in sorted(m.pools[p].blocks.items()):
            if not m.block_handles[b].alive:
                return f"registry {p!r} keeps a dead entry for hash {h} after every channel was drained"
    for g, reg in sorted(m.globals.items()):
        for k, r in sorted(reg.items(), key=lambda x: (x[0][0], str(x[0][1]))):
            if not m.handles[r].alive:
                return f"global registry {g!r} keeps a dead entry for hash {k[0]} after every channel was drained"
    return None


def _tier_matches(c: StepContext) -> str | None:
    m: RegistryWorld = c.model
    for n, v in sorted(m.values.items()):
        if isinstance(v, BlockState) and v.reg is not None and v.bh is not None:
            pool = m.pools[m.block_handles[v.bh].pool]
            t = m.handles[v.reg].tier
            if t != pool.tier:
                return f"state {n!r} in {pool.tier} registry {pool.name!r} holds the {t} registration handle {v.reg}"
    return None


def _arc_count(c: StepContext) -> str | None:
    m: RegistryWorld = c.model
    held = _holders(m)
    for r, h in sorted(m.handles.items()):
        if h.strong != held[r]:
            return f"registration handle {r} counts {h.strong} Arcs but {held[r]} values hold it"
    return None


def _publication_once(c: StepContext) -> str | None:
    m: RegistryWorld = c.model
    pend = _holders(m, publications_only=True)
    for r, h in sorted(m.handles.items()):
        if not h.alive:
            continue
        want = 0 if c.monitor.registers[r] else 1
        if pend[r] != want:
            state = "Registered" if c.monitor.registers[r] else "not yet Registered"
            return f"handle {r} ({state}) has {pend[r]} pending publications, expected {want}"
    return None


def _references_resolve(c: StepContext) -> str | None:
    m: RegistryWorld = c.model
    owners: dict[int, tuple[str, BlockState]] = {}
    for n, v in sorted(m.values.items()):
        if isinstance(v, BlockState) and v.kind == "Registered":
            assert v.reg is not None and v.bh is not None and v.block is not None
            if v.reg not in m.handles or v.bh not in m.block_handles:
                return f"state {n!r} names a forgotten handle"
            if m.handles[v.reg].block.sequence_hash != v.block.sequence_hash:
                return f"state {n!r} of hash {v.block.sequence_hash} holds handle {v.reg} of another hash"
            if m.block_handles[v.bh].sequence_hash != v.block.sequence_hash or not m.block_handles[v.bh].alive:
                return f"state {n!r} holds a block handle of another hash or a dead one"
            owners[v.bh] = (n, v)
        elif isinstance(v, PublishHandle | int) and not (isinstance(v, bool)):
            rid = v.reg if isinstance(v, PublishHandle) else v
            if rid not in m.handles or not m.handles[rid].alive:
                return f"{n!r} names a dead or unknown registration handle {rid}"
        elif isinstance(v, Publisher) and any(r not in m.handles or not m.handles[r].alive for r in v.handles):
            return f"publisher {n!r} holds a dead or unknown registration handle"
    for pname, pool in sorted(m.pools.items()):
        for h, b in sorted(pool.blocks.items()):
            bh = m.block_handles.get(b)
            if bh is None or bh.pool != pname or bh.sequence_hash != h:
                return f"registry {pname!r} entry for hash {h} names block handle {b} of another pool or hash"
            if bh.alive and b not in owners:
                return f"registry {pname!r}: live block handle {b} has no registered state"
            if not bh.alive and h not in pool.pending:
                return f"registry {pname!r}: dead entry for hash {h} with nothing queued to clean it"
    for g, reg in sorted(m.globals.items()):
        for (h, t), r in sorted(reg.items(), key=lambda x: (x[0][0], str(x[0][1]))):
            hd = m.handles.get(r)
            if hd is None or hd.block.sequence_hash != h or (t is not None and hd.tier != t):
                return f"global {g!r} entry ({h}, {t}) names a handle of another key"
            if not hd.alive and "dead_global_entry_leaks" not in m.quirks:
                return f"global {g!r} keeps the dead handle {r}"
    for r, hd in sorted(m.handles.items()):
        if hd.alive and hd.registered:
            k = (hd.block.sequence_hash, None if m.untiered else hd.tier)
            if m.globals.get(hd.scope, {}).get(k) != r:
                return f"live handle {r} is not what its global key {k} names"
    return None


def _rejection_no_change(c: StepContext) -> str | None:
    if c.error is None or c.pre_key is None:
        return None
    if c.pre.post_key != c.pre_key or c.events:
        return f"{c.op} was rejected ({c.error}) but changed the state or emitted events"
    return None


INVARIANTS: tuple[Invariant, ...] = (
    Invariant(
        "reg.one_block_handle_per_pool_hash",
        C,
        "state",
        "A registry holds at most one live block handle per sequence hash (§3.7 #1).",
        _one_block_handle,
    ),
    Invariant(
        "reg.one_registration_per_key",
        C,
        "state",
        "Across the pools sharing a global registry, at most one live registration handle per "
        "(tier, sequence hash) (§3.7 #2).",
        _one_registration,
    ),
    Invariant(
        "reg.pool_lists_iff_live",
        C,
        "state",
        "A registry reports a hash as registered iff it holds a live block handle for it.",
        _lists_iff_live,
        witnesses=("reg.w.reregister_before_drain",),
    ),
    Invariant(
        "reg.drained_no_dead_entries",
        C,
        "state",
        "Once every unregister channel is drained, no per-pool or global entry is dead.",
        _no_dead_after_drain,
        witnesses=("reg.w.drain_cleans",),
    ),
    Invariant(
        "reg.handle_tier_matches_pool",
        C,
        "state",
        "A registered block holds a registration handle of its own registry's storage tier.",
        _tier_matches,
        witnesses=("reg.w.shared_registration",),
    ),
    Invariant(
        "reg.arc_count_matches_holders",
        C,
        "state",
        "Each registration handle's Arc count equals the number of values holding it.",
        _arc_count,
    ),
    Invariant(
        "reg.remove_after_register",
        C,
        "stream",
        "Every Remove of a registration handle comes after its Register (§3.7 #3).",
        MonitorFault("reg.remove_after_register"),
        witnesses=("reg.w.remove",),
    ),
    Invariant(
        "reg.one_remove_per_handle",
        C,
        "stream",
        "A registration handle is Removed at most once.",
        MonitorFault("reg.one_remove_per_handle"),
    ),
    Invariant(
        "reg.register_at_most_once",
        C,
        "stream",
        "A registration handle is Registered at most once.",
        MonitorFault("reg.register_at_most_once"),
        witnesses=("reg.w.register",),
    ),
    Invariant(
        "reg.register_only_registered",
        C,
        "stream",
        "Every Register names a handle that a successful register_block created.",
        MonitorFault("reg.register_only_registered"),
        needs=("events", "snapshot"),  # which handles a successful register_block created
    ),
    Invariant(
        "reg.rejection_no_change",
        C,
        "step",
        "A rejected operation changes nothing and emits nothing (§3.7 #4).",
        _rejection_no_change,
        witnesses=("reg.w.already_registered",),
    ),
    Invariant(
        "reg.publication_pending_once",
        C,
        "state",
        "A live handle not yet Registered has exactly one pending publication (an armed publish "
        "handle or a publisher entry); a Registered one has none.",
        _publication_once,
        lemma=True,
    ),
    Invariant(
        "reg.references_resolve",
        C,
        "state",
        "Every reference resolves: states, publish handles, Arcs and publishers name live handles of "
        "their hash; a live per-pool entry is held by a registered state, a dead one has its hash queued "
        "for cleanup; a global entry names a handle of its key, and every live handle is what its key names.",
        _references_resolve,
        lemma=True,
    ),
)


def _registered_ok(c: StepContext) -> bool:
    return c.op == "register_block" and c.error is None


WITNESSES: tuple[Witness, ...] = (
    Witness("reg.w.register", C, "A Register is published.", lambda c: any(e.kind == "Register" for e in c.events)),
    Witness("reg.w.remove", C, "A Remove is published.", lambda c: any(e.kind == "Remove" for e in c.events)),
    Witness(
        "reg.w.shared_registration",
        C,
        "register_block returns Ok(None): another pool's handle is reused.",
        lambda c: _registered_ok(c) and c.result is None,
    ),
    Witness(
        "reg.w.reregister_before_drain",
        C,
        "A hash is registered again in a pool whose channel still carries its earlier drop.",
        lambda c: _registered_ok(c) and c.pre.pending_hit,
    ),
    Witness(
        "reg.w.already_registered",
        C,
        "register_block is rejected with BlockAlreadyRegistered.",
        lambda c: c.op == "register_block" and type(c.error).__name__ == "BlockAlreadyRegistered",
    ),
    Witness(
        "reg.w.drain_cleans",
        C,
        "The unregister task removes an entry.",
        lambda c: c.op == "drain" and c.pre.entries > _entries(c.model),
    ),
)


def _entries(m: RegistryWorld) -> int:
    return sum(len(p.blocks) for p in m.pools.values()) + sum(len(g) for g in m.globals.values())


entries = _entries
