"""The G1 manager with its native (vLLM-style) backend (seed 002), driven request by request."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from kvmodel.components.g1_native.actions import ACTIONS
from kvmodel.components.g1_requests import G1RequestSystem, renamed_blocks, renaming
from kvmodel.invariants.core import counts_of
from kvmodel.invariants.g1 import Before
from kvmodel.model.errors import InvalidInput


class G1System(G1RequestSystem):
    """The G1 facade with the native backend, driven request by request.

    Operations (trace format; one action class each, ``actions.py``): ``new_request {owner,
    tokens}`` (a sequence, no signal yet),
    ``allocate {owner, reuse}`` (the creation signal; with ``reuse`` its cached full-block
    prefix is authorised, capped like the scheduler's hit at ``(n-1)//block_size`` blocks),
    ``push {owner, token}`` (the sequence's Promote and Use of a new partial),
    ``finalize {owner}`` (everything computed: ``finalize_computed_prefix(computed, len)``),
    ``free {owner}`` (the terminal Deref, leaf first), ``deref_in_order {owner}`` (the same
    blocks in table order), ``reserve_decode {count}`` / ``release_decode {}``,
    ``reserve_destination {owner, tokens}`` / ``activate_destination {owner}`` /
    ``cancel_destination {owner}``, and ``counts {}``.
    """

    ACTIONS = ACTIONS
    OPS = ACTIONS.ops
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

    def _live(self, owner: Any) -> Any:
        """The request's sequence, if it is not a destination reservation still in transfer."""
        s = self._seq(owner)
        if owner in self.dest:
            raise InvalidInput(f"request {owner} is a destination reservation (activate or cancel it)")
        return s

    def _outstanding(self) -> int:
        return int(sum(r.pool.fresh for r in self.decodes) + sum(r.pool.fresh for r in self.dest.values()))

    def _sequence(self, o: int, tokens: list[int]) -> Any:
        from kvmodel.model.g1.sequence import ActiveSequence

        bs = self.model.block_size
        caching = self.config["enable_prefix_caching"]
        gen = self._generation(o, caching)
        return ActiveSequence(tokens, 8, bs, caching, name=f"r{o}", generation=gen)

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
        self._forget(o)
        return out

    def _push(self, o: int, token: int) -> Any:
        g = self.model
        s = self._live(o)
        if o not in g.native.tables:
            # out of protocol: the scheduler decodes only admitted (allocated) requests
            raise InvalidInput(f"request {o} is not allocated, so it does not decode")
        sigs = s.push(token) or []
        return [g.process_for_request(o, x, 0) for x in sigs]

    def _activated(self, o: int, held: Any) -> None:
        """The reservation became the request's table, its prompt computed."""
        self.computed[o] = self.seqs[o].num_input_tokens

    def _forget(self, o: int) -> None:
        super()._forget(o)
        self.computed.pop(o, None)

    def _before(self, of_model: Any) -> Before:
        return Before(set(self.model.native.tables))

    def _observe(self) -> list[Any]:
        events: list[Any] = self.model.drain_events()
        self.monitor.observe(events)
        return events

    def _after(self, pre: Before) -> None:
        pre.outstanding_fresh = self._outstanding()
        if self.dest:
            pre.dest_pins = Counter(i for r in self.dest.values() for _, i in r.pool.prefix)
            pre.dest_prefix = {o: len(r.pool.prefix) for o, r in self.dest.items()}
        else:  # most states hold no destination (the Before's own empty ones stand)
            pre.dest_pins, pre.dest_prefix = counts_of(()), {}
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
        res = self._reservations(owner)
        return (self.model.arm.key(owner, uuid) if perm else self.model.key(), self.monitor.key(), reqs, res)

    def _reservations(self, owner: Callable[[int], int]) -> Any:
        return (
            tuple((len(r.pool.prefix), r.pool.fresh) for r in self.decodes),
            tuple(sorted((owner(o), tuple(h for h, _ in r.pool.prefix), r.pool.fresh) for o, r in self.dest.items())),
        )
