"""The G1 KVBM system's request-level operations as typed actions (issue 22).

Each class is one operation of :class:`~kvmodel.components.g1_kvbm.system.G1KvbmSystem`: its
trace-format arguments and their checks, and what it does, as the mocker's scheduler drives the
G1 manager over the KVBM backend (the mocker's ``kvbm_backend.rs`` over kvbm-logical, fa6894c9a:
``process_for_request``, ``process_decode_signal_for_request``, the decode and destination
reservations), plus the two malformed inputs the world sends on purpose (``bad_use``,
``bad_deref``). The explorer's world (``space.py``) builds its moves' actions from these classes.
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

NAME = "g1_kvbm"


def _caching(v: Any) -> bool:
    """A request's ``caching`` (true where the key was left out: hashed blocks)."""
    return True if v is ABSENT else bool(v)


@attrs.frozen
class NewRequest(G1Action):
    """A request arrives: its sequence over ``tokens`` (``caching`` false: random hashes)."""

    op = "new_request"
    RETURNS = "null"
    MEANS = (
        "`null`; `caching` false gives random hashes, fresh for every sequence (compared up to "
        "a consistent renaming: a port draws its own)"
    )
    ARGS: ClassVar[A.Spec] = {"owner": (R, A.owner), "tokens": (R, A.tokens), "caching": (O, A.boolean)}
    owner: int
    tokens: list[int]
    caching: Any = ABSENT

    def run(self, system: Any) -> None:
        o = self.owner
        system.seqs[o] = system._new_seq(o, self.tokens, _caching(self.caching))
        system.holdings[o] = []


@attrs.frozen
class Allocate(G1Action):
    """The request's creation signal; on ``Ready`` the request holds the signal's blocks."""

    op = "allocate"
    RETURNS = 'Ready(n) | "CapacityExhausted"'
    MEANS = "`Ready(n)` (n: blocks newly taken from the pool; 0 when every block was found) or `CapacityExhausted`"
    ARGS: ClassVar[A.Spec] = {"owner": (R, A.owner)}
    owner: int

    def run(self, system: Any) -> Any:
        o = self.owner
        s = system._seq(o)
        if system.holdings.get(o) or o in system.dest:
            raise InvalidInput(f"request {o} is already allocated")
        sig = s.prepare_allocation(len(s))
        if sig is None:
            return Ready(0)
        out = system.model.process_for_request(o, sig, 0)
        if isinstance(out, Ready):
            s.commit_allocation(len(s))
            system.holdings[o] = list(sig.blocks)
        return out


@attrs.frozen
class DecodePush(G1Action):
    """The same through the outstanding decode reservation (``process_decode_signal_for_request``)."""

    op = "decode_push"
    RETURNS = '[Ready(n) | "CapacityExhausted"]'
    MEANS = "as `push`, through the outstanding decode reservation"
    ARGS: ClassVar[A.Spec] = {"owner": (R, A.owner), "token": (R, A.u32)}
    owner: int
    token: int

    def run(self, system: Any) -> Any:
        return system._push(self.owner, self.token, True)


@attrs.frozen
class Resend(G1Action):
    """The request's held blocks named again in one Use: a second logical holder of its table."""

    op = "resend"
    RETURNS = 'Ready(n) | "CapacityExhausted"'
    MEANS = "the Use's result: the request's held blocks named again"
    ARGS: ClassVar[A.Spec] = {"owner": (R, A.owner)}
    owner: int

    def run(self, system: Any) -> Any:
        o = self.owner
        s = system._seq(o)
        held = system.holdings.get(o) or []
        if not held or o in system.dest:
            raise InvalidInput(f"request {o} holds nothing")
        sig = system._use_of(s, held)
        out = system.model.process_for_request(o, sig, 0)
        if isinstance(out, Ready):
            system.holdings[o] = held + list(sig.blocks)
        return out


@attrs.frozen
class ReserveDestination(G1Action):
    """A destination reservation for a transferred request's prompt (``reserve_destination_at``):
    the transferable prompt tokens and the pinned blocks, or ``CapacityExhausted``."""

    op = "reserve_destination"
    RETURNS = '{transferable_prompt_tokens: usize, pinned: usize} | "CapacityExhausted"'
    MEANS = (
        "`{transferable_prompt_tokens, pinned}` (`pinned`: the cached prefix blocks the "
        "reservation holds), or `CapacityExhausted`"
    )
    ARGS: ClassVar[A.Spec] = {"owner": (R, A.owner), "tokens": (R, A.tokens), "caching": (O, A.boolean)}
    owner: int
    tokens: list[int]
    caching: Any = ABSENT

    def run(self, system: Any) -> Any:
        g = system.model
        o = self.owner
        s = system._new_seq(o, self.tokens, _caching(self.caching))
        r = g.reserve_destination_at(o, s)
        if isinstance(r, CapacityExhausted):
            return r
        system.seqs[o], system.dest[o], system.holdings[o] = s, r, []
        return {"transferable_prompt_tokens": r.transferable_prompt_tokens(g.block_size), "pinned": len(r.pinned)}


KINDS = ("dup_partial", "hash_two_plhs", "plh_alias", "dup_full")


@attrs.frozen
class BadUse(G1Action):
    """A malformed Use for no request: ``dup_partial`` (one partial named twice),
    ``hash_two_plhs`` (one hash under two positional lineage hashes), ``plh_alias`` (the full
    block ``BAD_HASH`` under the PLH of the first block of the tokens ``1..block_size``: a second
    sequence hash for a PLH, which real 51-59-bit fragments give only by collision; Rust's own
    test of PLH reuse in ``kvbm_backend.rs`` fa6894c9a builds such a Use directly) or
    ``dup_full`` (the fresh full block ``BAD_HASH`` named twice under one PLH: kvbm-logical's
    Reject policy registers it once and the second entry resolves to the first's block, as
    Rust's ``duplicate_fresh_registration_reuses_canonical_without_duplicate_event`` test
    builds it). A ``plh_alias`` or ``dup_full`` Use that succeeds leaves its block held by the
    caller, one reference per entry; each ``bad_deref`` releases one."""

    op = "bad_use"
    RETURNS = 'Ready(n) | "CapacityExhausted"'
    MEANS = "a malformed Use's result (a panic; `plh_alias`, `dup_full`: the Use's result)"
    TYPES: ClassVar[dict[str, str]] = {"kind": "dup_partial|hash_two_plhs|plh_alias|dup_full"}
    ARGS: ClassVar[A.Spec] = {"kind": (R, A.string)}
    kind: str

    def run(self, system: Any) -> Any:
        from kvmodel.model.blocks import FullBlock, PartialBlock
        from kvmodel.model.g1.sequence import G1Use

        if self.kind == "dup_partial":
            sig = G1Use((PartialBlock("bad"), PartialBlock("bad")))
        elif self.kind == "hash_two_plhs":
            h = system.BAD_HASH
            sig = G1Use((FullBlock(h), FullBlock(h)), (), ((h, None, 0), (h, None, 1)))
        elif self.kind in ("plh_alias", "dup_full"):
            # root blocks whose tokens hash is their hash (lineage holds); the block acquired is
            # held by the Use's caller, ALIAS_HOLDER, a reference per entry, until ``bad_deref``s
            h = system.BAD_HASH
            blocks: tuple[FullBlock, ...]
            if self.kind == "plh_alias":
                _, plhs = system.sequence_hashes(-1, list(range(1, system.model.block_size + 1)), True)
                blocks = (FullBlock(h),)
                sig = G1Use(blocks, (h,), (plhs[0],))
            else:
                blocks = (FullBlock(h), FullBlock(h))
                sig = G1Use(blocks, (h, h), ((h, None, 0), (h, None, 0)))
            out = system.model.process_for_request(-1, sig, 0)
            if isinstance(out, Ready):
                system.holdings[system.ALIAS_HOLDER] = list(blocks)
            return out
        else:
            raise InvalidInput(f"bad_use kind must be {' | '.join(KINDS)}, got {self.kind!r}")
        return system.model.process_for_request(-1, sig, 0)


@attrs.frozen
class BadDeref(G1Action):
    """The request's Deref with an unknown block at the end (the request leaves)."""

    op = "bad_deref"
    RETURNS = "Ready(n)"
    MEANS = "the request's Deref with an unknown block at the end (a panic)"
    ARGS: ClassVar[A.Spec] = {"owner": (R, A.owner)}
    owner: int

    def run(self, system: Any) -> Any:
        return system._deref(self.owner, True)


ACTIONS = Actions(
    NAME,
    (
        NewRequest,
        Allocate,
        Push,
        DecodePush,
        Resend,
        Free,
        ReserveDecode,
        ReleaseDecode,
        ReserveDestination,
        ActivateDestination,
        CancelDestination,
        BadUse,
        BadDeref,
        Counts,
    ),
)
