"""The G1 native system's request-level operations as typed actions (issue 22).

Each class is one operation of :class:`~kvmodel.components.g1_native.system.G1System`: its
trace-format arguments and their checks, and what it does, as the mocker's scheduler drives the
G1 manager over the native backend (seed 002, ``lib/llm/src/block_manager/g1`` at the seed's
revision: ``G1Manager::process_for_request``, ``finalize_computed_prefix``, the decode and
destination reservations). The explorer's world (``space.py``) builds its moves' actions from
these classes; the decoder builds them from a trace's JSON.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from kvmodel import argspec as A
from kvmodel.actions import ABSENT, Actions
from kvmodel.argspec import OPTIONAL as O
from kvmodel.argspec import REQUIRED as R
from kvmodel.components.g1_requests import (
    ActivateDestination,
    CancelDestination,
    Counts,
    Free,
    G1Action,
    Push,
    ReleaseDecode,
    ReserveDecode,
)
from kvmodel.model.errors import InvalidInput
from kvmodel.model.g1.acquire import CapacityExhausted, Ready

NAME = "g1_native"


@attrs.frozen
class NewRequest(G1Action):
    """A request arrives: its sequence over ``tokens``, no signal yet (an id in use is refused)."""

    op = "new_request"
    RETURNS = "null"
    MEANS = "`null`; the request's sequence (no signal yet)"
    ARGS: ClassVar[A.Spec] = {"owner": (R, A.owner), "tokens": (R, A.tokens)}
    owner: int
    tokens: list[int]

    def run(self, system: Any) -> None:
        o = self.owner
        if o in system.seqs:
            raise InvalidInput(f"request {o} exists")
        system.seqs[o] = system._sequence(o, self.tokens)
        system.computed[o] = 0


@attrs.frozen
class Allocate(G1Action):
    """The request's creation signal. With ``reuse``, its cached full-block prefix is
    authorised, capped as the scheduler caps its hit, at ``(n-1)//block_size`` blocks."""

    op = "allocate"
    RETURNS = 'Ready(n) | "CapacityExhausted"'
    MEANS = (
        "`Ready(n)` (n blocks newly allocated) or `CapacityExhausted`; `reuse` authorises the "
        "cached prefix, at most `(len-1)//block_size` blocks"
    )
    ARGS: ClassVar[A.Spec] = {"owner": (R, A.owner), "reuse": (O, A.boolean)}
    owner: int
    reuse: Any = ABSENT

    def run(self, system: Any) -> Any:
        g = system.model
        bs = g.block_size
        o = self.owner
        s = system._live(o)
        sig = s.prepare_allocation(len(s))
        if sig is None:
            return Ready(0)
        reusable = 0
        if self.reuse is True and s.num_allocated_tokens == 0 and o not in g.native.tables:
            cap = (len(s) - 1) // bs
            for b in sig.blocks[:cap]:
                if getattr(b, "hash", None) is None or g.native.prefix_hit(b.hash) is None:
                    break
                reusable += 1
        system._pre.reusable = reusable
        out = g.process_for_request(o, sig, reusable)
        if isinstance(out, Ready):
            s.commit_allocation(len(s))
            system.computed[o] = max(system.computed[o], reusable * bs)
        return out


@attrs.frozen
class Finalize(G1Action):
    """Everything the request has is computed: ``finalize_computed_prefix(computed, len)``."""

    op = "finalize"
    RETURNS = "null"
    MEANS = "`null`; everything pushed is computed (Stored per newly visible run)"
    ARGS: ClassVar[A.Spec] = {"owner": (R, A.owner)}
    owner: int

    def run(self, system: Any) -> None:
        o = self.owner
        s = system._live(o)
        before, after = system.computed.get(o, 0), len(s)
        system.model.finalize_computed_prefix(o, before, after, s)
        system.computed[o] = after


@attrs.frozen
class DerefInOrder(G1Action):
    """The same Deref naming the request's blocks in table order (the request leaves)."""

    op = "deref_in_order"
    RETURNS = "Ready(n)"
    MEANS = "the Deref's result, blocks named in table order"
    ARGS: ClassVar[A.Spec] = {"owner": (R, A.owner)}
    owner: int

    def run(self, system: Any) -> Any:
        return system._deref(self.owner, True)


@attrs.frozen
class ReserveDestination(G1Action):
    """A destination reservation for a transferred request's prompt (``reserve_destination_at``):
    the transferable and uncached prompt tokens, or ``CapacityExhausted``."""

    op = "reserve_destination"
    RETURNS = '{transferable_prompt_tokens: usize, uncached_prompt_tokens: usize} | "CapacityExhausted"'
    MEANS = "`{transferable_prompt_tokens, uncached_prompt_tokens}`, or `CapacityExhausted`"
    ARGS: ClassVar[A.Spec] = {"owner": (R, A.owner), "tokens": (R, A.tokens)}
    owner: int
    tokens: list[int]

    def run(self, system: Any) -> Any:
        g = system.model
        bs = g.block_size
        o = self.owner
        if o in system.seqs:
            raise InvalidInput(f"request {o} exists")
        s = system._sequence(o, self.tokens)
        r = g.reserve_destination_at(o, s)
        if isinstance(r, CapacityExhausted):
            return r
        system.seqs[o], system.computed[o], system.dest[o] = s, 0, r
        cached = len(r.pool.prefix) * bs
        return {
            "transferable_prompt_tokens": r.transferable_prompt_tokens(bs),
            "uncached_prompt_tokens": max(0, s.num_input_tokens - cached),
        }


ACTIONS = Actions(
    NAME,
    (
        NewRequest,
        Allocate,
        Push,
        Finalize,
        Free,
        DerefInOrder,
        ReserveDecode,
        ReleaseDecode,
        ReserveDestination,
        ActivateDestination,
        CancelDestination,
        Counts,
    ),
)
