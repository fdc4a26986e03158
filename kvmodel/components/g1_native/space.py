"""The G1 native backend's bounded world for the explorer: request-level moves."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs
from hypothesis import strategies as st

from kvmodel.components.g1_native.actions import (
    Allocate,
    DerefInOrder,
    Finalize,
    NewRequest,
    ReserveDestination,
)
from kvmodel.components.g1_requests import (
    TOKENS,
    ActivateDestination,
    CancelDestination,
    Free,
    G1Moves,
    Push,
    ReleaseDecode,
    ReserveDecode,
    drawn_prompts,
    prompt_table,
)
from kvmodel.explorer import NoSymmetry, owner_canonical
from kvmodel.machines import world_machine
from kvmodel.model.errors import InvalidInput, require_naturals
from kvmodel.systems import System

if TYPE_CHECKING:
    from kvmodel.components.g1_native.system import G1System

G1_PROMPTS: tuple[tuple[int, ...], ...] = ((1, 2, 5), (7,), (1, 2, 3, 4))


@attrs.frozen
class G1Space(G1Moves, NoSymmetry):
    """Bounded G1 world (native backend): ``owners`` requests, each started from one of the
    prompts (block size 2: a full block and a partial; a lone partial; the same first block and one more),
    growing by ``pushes`` tokens at most (each push the token ``token``); at most one decode
    reservation of ``decode`` slots. The prompts are ``texts`` (by default the three above; the
    Hypothesis machine draws its own, :data:`WORLDS`). Moves: start a request, allocate it (with
    or without prefix reuse), push a token, finalize what it has, free it (leaf first) or Deref
    it in table order, reserve / release decode slots, reserve a destination for a prompt and
    activate or cancel it."""

    component = "g1_native"
    owners: int = 2
    prompts: int = 3
    pushes: int = 2
    decode: int = 1
    texts: tuple[tuple[int, ...], ...] = attrs.field(default=G1_PROMPTS, converter=prompt_table)
    token: int = 6

    def __attrs_post_init__(self) -> None:
        require_naturals(self, ("owners", "prompts", "pushes", "decode", "token"))
        if self.prompts > len(self.texts):
            raise InvalidInput(f"at most {len(self.texts)} prompts")

    def to_json(self) -> dict[str, Any]:
        """The world's parameters (the prompts and the pushed token only where not the default
        ones, so a manifest's world stays as it was written)."""
        out: dict[str, Any] = {k: int(getattr(self, k)) for k in ("owners", "prompts", "pushes", "decode")}
        if self.texts != G1_PROMPTS:
            out["texts"] = [list(p) for p in self.texts]
        if self.token != 6:
            out["token"] = self.token
        return out

    def key(self, s: System, symmetry: bool) -> Any:
        """With symmetry, requests are interchangeable (every move ranges over all of them
        alike): the canonical form is the least of the state's keys under every renaming of the
        requests, with the number of distinct ones (its orbit's size)."""
        return owner_canonical(s, self.owners) if symmetry else s.key()

    def orbit(self, key: Any) -> int:
        return int(key[0])

    def system(self, config: dict[str, Any], quirks: Iterable[str]) -> System:
        from kvmodel.components.g1_native.system import G1System

        return G1System({"max_capacity": 3, **config}, list(quirks))

    def moves(self) -> list[Any]:
        """The world's action instances, in the order the search tries them."""
        os_, ps = range(self.owners), range(self.prompts)
        texts = self.texts
        out: list[Any] = [NewRequest(o, list(texts[p])) for o in os_ for p in ps]
        out += [Allocate(o, r) for o in os_ for r in (False, True)]
        out += [Push(o, self.token) for o in os_]
        out += [c(o) for c in (Finalize, Free, DerefInOrder) for o in os_]
        if self.decode:
            out += [ReserveDecode(self.decode), ReleaseDecode()]
        out += [ReserveDestination(o, list(texts[p])) for o in os_ for p in ps]
        out += [c(o) for c in (ActivateDestination, CancelDestination) for o in os_]
        return out

    # -- the guards (``ActionMoves.GUARDS``; those both G1 worlds share are ``G1Moves``'s): the
    # scheduler's own preconditions and the bounds

    def _unallocated(self, s: G1System, a: Any) -> bool:
        """A request that exists, is not a pending destination and has not been allocated."""
        seq = s.seqs.get(a.owner)
        return seq is not None and seq.num_allocated_tokens == 0 and a.owner not in s.dest

    def _decodes(self, s: G1System, a: Any) -> bool:
        """Decode follows allocation; a push that starts a new block (and so promotes the
        completed tail) happens only once everything before it was computed and finalized (the
        scheduler generates a token after the forward pass over its predecessors); a request
        grows by ``pushes`` tokens at most."""
        o = a.owner
        seq = s.seqs.get(o)
        return (
            seq is not None
            and o in s.model.native.tables
            and ((len(seq) + 1) % seq.block_size != 1 or s.computed.get(o) == len(seq))
            and len(seq) < seq.num_input_tokens + self.pushes
            and o not in s.dest
        )

    def _allocated(self, s: G1System, a: Any) -> bool:
        """An allocated request (it owns a block table) that is not a pending destination."""
        o = a.owner
        return s.seqs.get(o) is not None and o in s.model.native.tables and o not in s.dest


G1Space.GUARDS = {
    NewRequest: G1Space._fresh,
    ReserveDestination: G1Space._fresh,
    Allocate: G1Space._unallocated,
    Push: G1Space._decodes,
    Finalize: G1Space._running,
    Free: G1Space._allocated,
    DerefInOrder: G1Space._allocated,
    ReserveDecode: G1Space._no_decode,
    ReleaseDecode: G1Space._a_decode,
    ActivateDestination: G1Space._transferring,
    CancelDestination: G1Space._transferring,
}


@st.composite
def _worlds(draw: Any) -> G1Space:
    texts = G1_PROMPTS + draw(drawn_prompts(G1_PROMPTS, 2))
    return G1Space(3, len(texts), 3, 2, texts, draw(st.just(6) | TOKENS))


# the Hypothesis machine's worlds: three requests over the three prompts and up to two drawn ones
# sharing their prefixes, growing by three tokens (each 6 or a drawn one), decode reservations of
# two slots; it shrinks to the explorer's world widened (the bounds are not drawn: each drawn
# parameter costs Hypothesis's shrink phase examples)
WORLDS = _worlds()
G1Machine = world_machine("G1Machine", WORLDS, {"max_capacity": 3})
