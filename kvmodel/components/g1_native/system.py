"""The G1 manager with its native (vLLM-style) backend (seed 002), driven request by request."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, ClassVar

from kvmodel import argspec as A
from kvmodel.argspec import OPTIONAL as O
from kvmodel.argspec import REQUIRED as R
from kvmodel.components.g1_requests import G1RequestSystem, renamed_blocks, renaming
from kvmodel.invariants.g1 import Before
from kvmodel.model.errors import InvalidInput
from kvmodel.model.g1.acquire import CapacityExhausted, Ready


class G1System(G1RequestSystem):
    """The G1 facade with the native backend, driven request by request.

    Operations (trace format): ``new_request {owner, tokens}`` (a sequence, no signal yet),
    ``allocate {owner, reuse}`` (the creation signal; with ``reuse`` its cached full-block
    prefix is authorised, capped like the scheduler's hit at ``(n-1)//block_size`` blocks),
    ``push {owner, token}`` (the sequence's Promote and Use of a new partial),
    ``finalize {owner}`` (everything computed: ``finalize_computed_prefix(computed, len)``),
    ``free {owner}`` (the terminal Deref, leaf first), ``deref_in_order {owner}`` (the same
    blocks in table order), ``reserve_decode {count}`` / ``release_decode {}``,
    ``reserve_destination {owner, tokens}`` / ``activate_destination {owner}`` /
    ``cancel_destination {owner}``, and ``counts {}``.
    """

    OPS = (
        "new_request",
        "allocate",
        "push",
        "finalize",
        "free",
        "deref_in_order",
        "reserve_decode",
        "release_decode",
        "reserve_destination",
        "activate_destination",
        "cancel_destination",
        "counts",
    )
    DEFAULTS: ClassVar[dict[str, Any]] = {
        "max_capacity": 4,
        "block_size": 2,
        "enable_prefix_caching": True,
        "publishers": True,
        "dp_rank": 0,
    }

    COMPONENT = "g1_native"
    BACKEND = "native"
    MANAGER_OPTIONS = ("enable_prefix_caching", "publishers", "dp_rank")

    def __init__(self, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None) -> None:
        super().__init__(config, quirks)
        self.computed: dict[int, int] = {}

    def _monitor(self) -> Any:
        from kvmodel.invariants.g1 import G1Monitor

        return G1Monitor()

    def _copy_own(self, c: Any) -> None:
        c.computed = dict(self.computed)

    def _bookkeeping(self) -> tuple[Any, ...]:
        return (dict(self.computed),)

    def _restore(self, saved: tuple[Any, ...]) -> None:
        (self.computed,) = saved

    ARGS: ClassVar[dict[str, A.Spec]] = {
        "new_request": {"owner": (R, A.owner), "tokens": (R, A.tokens)},
        "allocate": {"owner": (R, A.owner), "reuse": (O, A.boolean)},
        "push": {"owner": (R, A.owner), "token": (R, A.u32)},
        "finalize": {"owner": (R, A.owner)},
        "free": {"owner": (R, A.owner)},
        "deref_in_order": {"owner": (R, A.owner)},
        "reserve_decode": {"count": (R, A.usize)},
        "release_decode": {},
        "reserve_destination": {"owner": (R, A.owner), "tokens": (R, A.tokens)},
        "activate_destination": {"owner": (R, A.owner)},
        "cancel_destination": {"owner": (R, A.owner)},
        "counts": {},
    }

    def _live(self, owner: Any) -> Any:
        """The request's sequence, if it is not a destination reservation still in transfer."""
        s = self._seq(owner)
        if owner in self.dest:
            raise InvalidInput(f"request {owner} is a destination reservation (activate or cancel it)")
        return s

    def _outstanding(self) -> int:
        return int(sum(r.pool.fresh for r in self.decodes) + sum(r.pool.fresh for r in self.dest.values()))

    def _sequence(self, o: int, tokens: list[int]) -> Any:
        from kvmodel.model.g1.sequence import NewActiveSequence

        bs = self.model.block_size
        return NewActiveSequence(tokens, 8, bs, self.config["enable_prefix_caching"], name=f"r{o}")

    def op_new_request(self, a: dict[str, Any]) -> None:
        o = a["owner"]
        if o in self.seqs:
            raise InvalidInput(f"request {o} exists")
        self.seqs[o] = self._sequence(o, a["tokens"])
        self.computed[o] = 0

    def op_allocate(self, a: dict[str, Any]) -> Any:
        g = self.model
        bs = g.block_size
        o = a["owner"]
        s = self._live(o)
        sig = s.prepare_allocation(len(s))
        if sig is None:
            return Ready(0)
        reusable = 0
        if a.get("reuse") and s.num_allocated_tokens == 0 and o not in g.native.tables:
            cap = (len(s) - 1) // bs
            for b in sig.blocks[:cap]:
                if getattr(b, "hash", None) is None or g.native.prefix_hit(b.hash) is None:
                    break
                reusable += 1
        self._pre.reusable = reusable
        out = g.process_for_request(o, sig, reusable)
        if isinstance(out, Ready):
            s.commit_allocation(len(s))
            self.computed[o] = max(self.computed[o], reusable * bs)
        return out

    def op_push(self, a: dict[str, Any]) -> Any:
        g = self.model
        o = a["owner"]
        s = self._live(o)
        if o not in g.native.tables:
            # out of protocol: the scheduler decodes only admitted (allocated) requests
            raise InvalidInput(f"request {o} is not allocated, so it does not decode")
        sigs = s.push(a["token"]) or []
        return [g.process_for_request(o, x, 0) for x in sigs]

    def op_finalize(self, a: dict[str, Any]) -> None:
        o = a["owner"]
        s = self._live(o)
        before, after = self.computed.get(o, 0), len(s)
        self.model.finalize_computed_prefix(o, before, after, s)
        self.computed[o] = after

    def _deref(self, o: int, in_table_order: bool) -> Any:
        from kvmodel.model.g1.sequence import G1Deref

        g = self.model
        s = self._live(o)
        sig = s.terminal_signal()
        if in_table_order:
            if o not in g.native.tables:
                raise InvalidInput(f"request {o} holds no blocks to name in table order")
            sig = G1Deref(tuple(reversed(sig.blocks)))
            t = g.native.tables.get(o, [])
            self._pre.deref_names_tail = len(t) == len(sig.blocks) and all(
                any(e.matches(b) for e in t) for b in sig.blocks
            )
        out = g.process_for_request(o, sig, 0)
        del self.seqs[o]
        self.computed.pop(o, None)
        return out

    def op_free(self, a: dict[str, Any]) -> Any:
        return self._deref(a["owner"], False)

    def op_deref_in_order(self, a: dict[str, Any]) -> Any:
        return self._deref(a["owner"], True)

    def op_reserve_decode(self, a: dict[str, Any]) -> Any:
        return self._reserve_decode(a["count"])

    def op_reserve_destination(self, a: dict[str, Any]) -> Any:
        g = self.model
        bs = g.block_size
        o = a["owner"]
        if o in self.seqs:
            raise InvalidInput(f"request {o} exists")
        s = self._sequence(o, a["tokens"])
        r = g.reserve_destination_at(o, s)
        if isinstance(r, CapacityExhausted):
            return r
        self.seqs[o], self.computed[o], self.dest[o] = s, 0, r
        cached = len(r.pool.prefix) * bs
        return {
            "transferable_prompt_tokens": r.transferable_prompt_tokens(bs),
            "uncached_prompt_tokens": max(0, s.num_input_tokens - cached),
        }

    def op_activate_destination(self, a: dict[str, Any]) -> None:
        o = a["owner"]
        r = self._destination(o)
        self.model.activate_destination(r)
        s = self.seqs[o]
        s.commit_allocation(s.num_input_tokens)
        self.computed[o] = s.num_input_tokens
        del self.dest[o]

    def op_cancel_destination(self, a: dict[str, Any]) -> None:
        o = a["owner"]
        r = self._destination(o)
        self.model.cancel_destination(r)
        del self.seqs[o]
        self.computed.pop(o, None)
        del self.dest[o]

    def _before(self) -> Before:
        return Before(set(self.model.native.tables))

    def _observe(self) -> list[Any]:
        events: list[Any] = self.model.drain_events()
        self.monitor.observe(events)
        return events

    def _after(self, pre: Before) -> None:
        pre.outstanding_fresh = self._outstanding()
        pre.dest_pins = Counter(i for r in self.dest.values() for _, i in r.pool.prefix)
        pre.dest_prefix = {o: len(r.pool.prefix) for o, r in self.dest.items()}
        pre.seqs = self.seqs
        pre.computed = self.computed

    def snapshot(self) -> dict[str, Any]:
        snap: dict[str, Any] = self.model.snapshot()
        snap["requests"] = {
            str(o): {"tokens": len(s), "allocated": s.num_allocated_tokens, "computed": self.computed.get(o, 0)}
            for o, s in sorted(self.seqs.items())
        }
        return snap

    def key(self) -> Any:
        return self.key_under(None)

    def key_under(self, perm: tuple[int, ...] | None) -> Any:
        """The state's key, or (``perm``: request ``o`` becomes ``perm[o]``) the key of the state
        with its requests renamed, the partial names their sequences minted (``r<o>.u<n>``) with
        them: what the explorer's owner symmetry compares."""
        owner, uuid = renaming(perm)
        reqs = tuple(
            sorted(
                (
                    owner(o),
                    tuple(s.tokens),
                    s.num_allocated_tokens,
                    self.computed.get(o, 0),
                    renamed_blocks(s.unique, uuid),
                )
                for o, s in self.seqs.items()
            )
        )
        res = (
            tuple((len(r.pool.prefix), r.pool.fresh) for r in self.decodes),
            tuple(sorted((owner(o), tuple(h for h, _ in r.pool.prefix), r.pool.fresh) for o, r in self.dest.items())),
        )
        return (self.model.arm.key(owner, uuid) if perm else self.model.key(), self.monitor.key(), reqs, res)
