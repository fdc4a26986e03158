"""The G1 KVBM backend's bounded world for the explorer: request-level moves."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs
from hypothesis import strategies as st

from kvmodel.components.g1_kvbm.actions import (
    Allocate,
    BadDeref,
    BadUse,
    DecodePush,
    NewRequest,
    Resend,
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
    from kvmodel.components.g1_kvbm.system import G1KvbmSystem

# (tokens, prefix caching): two full blocks; a block whose PLH collides with the first one's
# when fragments are reduced modulo 2 (a different sequence hash, the same PLH); a
# caching-disabled block (random hashes); a block with another PLH and a partial; the first
# prompt and a partial (three blocks: more than a capacity-2 world holds); the first prompt
# and two more blocks (four: more than the default capacity 3 holds, so its admission fails
# after matching whatever of the first prompt is cached, the condition of semantics §6 #7).
KVBM_PROMPTS: tuple[tuple[tuple[int, ...], bool], ...] = (
    ((1, 2, 3, 4), True),
    ((7, 8), True),
    ((9, 10), False),
    ((15, 16, 5), True),
    ((1, 2, 3, 4, 5), True),
    ((1, 2, 3, 4, 11, 12, 13, 14), True),
)


def _caching_table(v: Any) -> tuple[tuple[tuple[int, ...], bool], ...]:
    """A table of (prompt, prefix caching) as a world holds it (tuples; JSON gives lists)."""
    return tuple((prompt_table([p])[0], bool(c)) for p, c in v)


@attrs.frozen
class KvbmSpace(G1Moves, NoSymmetry):
    """Bounded G1 world with the KVBM backend (capacity 3, block size 2, PLH fragments modulo
    2): ``owners`` requests started from one of ``prompts`` prompts, growing by ``pushes``
    tokens; at most one decode reservation of ``decode`` slots; destinations; a request's
    blocks named again (``resend``); and the malformed inputs (``bad_use``, ``bad_deref``).

    With ``drivers`` (the workload generator's world), also the ``plh_alias`` Use (a second
    sequence hash for a PLH: PLH reuse at real fragment widths, which the explorer's worlds reach
    by reduced fragments instead), the ``dup_full`` Use (a fresh block named twice: the Reject
    policy's in-batch deduplication) and :meth:`runs`."""

    component = "g1_kvbm"
    owners: int = 2
    prompts: int = 3
    pushes: int = 1
    decode: int = 0
    bad: bool = True
    drivers: bool = False
    texts: tuple[tuple[tuple[int, ...], bool], ...] = attrs.field(default=KVBM_PROMPTS, converter=_caching_table)
    token: int = 6

    def __attrs_post_init__(self) -> None:
        require_naturals(self, ("owners", "prompts", "pushes", "decode", "token"))
        if self.prompts > len(self.texts):
            raise InvalidInput(f"at most {len(self.texts)} prompts")

    def to_json(self) -> dict[str, Any]:
        """The world's parameters (the prompts and the pushed token only where not the default
        ones, so a manifest's world stays as it was written)."""
        out: dict[str, Any] = {
            k: int(getattr(self, k)) for k in ("owners", "prompts", "pushes", "decode", "bad", "drivers")
        }
        if self.texts != KVBM_PROMPTS:
            out["texts"] = [[list(p), c] for p, c in self.texts]
        if self.token != 6:
            out["token"] = self.token
        return out

    def symmetric(self, s: Any) -> bool:
        """Whether requests are interchangeable in this world: where every prompt caches. A
        caching-disabled sequence draws random sequence hashes and whole random PLHs seeded by
        its request's name and generation (``model/g1/sequence.py``), so renaming its request
        maps its blocks onto none of another request's: no symmetry."""
        return all(c for _, c in self.texts[: self.prompts])

    def key(self, s: System, symmetry: bool) -> Any:
        """With symmetry in a world where requests are interchangeable (:meth:`symmetric`): the
        least of the state's keys under every renaming of the requests, with the orbit's size
        (``explorer.owner_canonical``); else the system's key."""
        return owner_canonical(s, self.owners) if symmetry and self.symmetric(s) else (1, s.key())

    def orbit(self, key: Any) -> int:
        return int(key[0])

    def _uncached(self) -> bool:
        """Whether the world holds the caching-disabled prompt (the third)."""
        return any(not c for _, c in self.texts[: self.prompts])

    def cannot_break(self) -> frozenset[str]:
        """Invariants no run of this world breaks, whatever its quirks (``kvmodel explore`` does
        not wait for them): without the third prompt, the caching-disabled one, no sequence is
        uncached, so ``kvbm.uncached_silent`` holds."""
        return frozenset() if self._uncached() else frozenset({"kvbm.uncached_silent"})

    def cannot_reach(self) -> frozenset[str]:
        """Witnesses no run of this world reaches: without the caching-disabled prompt no block
        of a caching-disabled sequence is registered (``kvbm.w.uncached_block``)."""
        return frozenset() if self._uncached() else frozenset({"kvbm.w.uncached_block"})

    def system(self, config: dict[str, Any], quirks: Iterable[str]) -> System:
        from kvmodel.components.g1_kvbm.system import G1KvbmSystem

        return G1KvbmSystem({"max_capacity": 3, "plh_fragments": 2, **config}, list(quirks))

    def moves(self) -> list[Any]:
        """The world's action instances, in the order the search tries them."""
        os_, ps = range(self.owners), range(self.prompts)
        texts = self.texts
        out: list[Any] = [NewRequest(o, list(texts[p][0]), texts[p][1]) for o in os_ for p in ps]
        out += [Allocate(o) for o in os_]
        out += [Push(o, self.token) for o in os_]
        out += [c(o) for c in (Resend, Free) for o in os_]
        if self.decode:
            out += [ReserveDecode(self.decode), ReleaseDecode()]
            out += [DecodePush(o, self.token) for o in os_]
        out += [ReserveDestination(o, list(texts[p][0]), texts[p][1]) for o in os_ for p in ps]
        out += [c(o) for c in (ActivateDestination, CancelDestination) for o in os_]
        if self.bad:
            out += [BadUse("dup_partial"), BadUse("hash_two_plhs")]
            if self.drivers:
                out += [BadUse("plh_alias"), BadUse("dup_full")]
            out += [BadDeref(o) for o in os_]
        return out

    def runs(self) -> dict[str, list[tuple[Any, ...]]]:
        """The generator's runs (``kvmodel.workloads``), with ``drivers``: a request of a caching
        prompt admitted and freed in one pick (``cached``), so that workloads hold several cached,
        evictable chains in varied orders, the condition of a failed admission's reordering
        (semantics §6 #7) and of evictions choosing between chains."""
        if not self.drivers:
            return {}
        ps = [p for p in range(self.prompts) if self.texts[p][1]]
        return {
            "cached": [
                (NewRequest(o, list(self.texts[p][0]), True), Allocate(o), Free(o))
                for o in range(self.owners)
                for p in ps
            ]
        }

    # -- the guards (``ActionMoves.GUARDS``; those both G1 worlds share are ``G1Moves``'s): the
    # scheduler's own preconditions and the bounds

    def bounds(self) -> list[str]:
        """The shared request bounds, and this world's own (``kvmodel explore`` reports them)."""
        out = [*super().bounds(), "a request's held blocks are named again (resend) once"]
        if self.bad:
            out.append("each malformed Use is sent while its entry is not installed (a faithful panic leaves it)")
        out.append("the router view's count of a hash is kept up to 2 in the key (more only once the stream is wrong)")
        return out

    def _bad_use_once(self, s: G1KvbmSystem, a: Any) -> bool:
        """Once: a faithful commit-time panic leaves the entry installed, and naming it again
        would only grow its reference count without bound."""
        m = s.model.kvbm
        return bool(s.BAD_HASH not in m.active_full and "bad" not in m.active_partial)

    def _unallocated(self, s: G1KvbmSystem, a: Any) -> bool:
        """A request that exists, holds nothing and is not a pending destination."""
        o = a.owner
        return s.seqs.get(o) is not None and not s.holdings.get(o) and o not in s.dest

    def _grows(self, s: G1KvbmSystem, o: int) -> bool:
        """An allocated request, not stalled on a failed step, grows by ``pushes`` tokens at most."""
        seq = s.seqs.get(o)
        if seq is None or not s.holdings.get(o) or o in s.dest or o in s.stalled:
            return False
        return bool(len(seq) < seq.num_input_tokens + self.pushes)

    def _pushes(self, s: G1KvbmSystem, a: Any) -> bool:
        """An allocated request, not stalled on a failed step, grows by ``pushes`` tokens at most."""
        return self._grows(s, a.owner)

    def _decode_pushes(self, s: G1KvbmSystem, a: Any) -> bool:
        """As a push, under a decode reservation with a slot left for a token starting a block."""
        if not self._grows(s, a.owner) or not s.decodes:
            return False
        seq = s.seqs[a.owner]
        return (len(seq) + 1) % seq.block_size != 1 or bool(s.decodes[0].slots)

    def _resends(self, s: G1KvbmSystem, a: Any) -> bool:
        """A request holding blocks, each once (its table not named again yet), not a pending
        destination."""
        held = s.holdings.get(a.owner) or []
        return bool(held) and len(held) == len(set(held)) and a.owner not in s.dest


KvbmSpace.GUARDS = {
    BadUse: KvbmSpace._bad_use_once,
    NewRequest: KvbmSpace._fresh,
    ReserveDestination: KvbmSpace._fresh,
    Allocate: KvbmSpace._unallocated,
    Push: KvbmSpace._pushes,
    DecodePush: KvbmSpace._decode_pushes,
    Resend: KvbmSpace._resends,
    Free: KvbmSpace._running,
    BadDeref: KvbmSpace._running,
    ReserveDecode: KvbmSpace._no_decode,
    ReleaseDecode: KvbmSpace._a_decode,
    ActivateDestination: KvbmSpace._transferring,
    CancelDestination: KvbmSpace._transferring,
}


@st.composite
def _worlds(draw: Any) -> KvbmSpace:
    literal = KVBM_PROMPTS[:5]
    extra = draw(drawn_prompts(tuple(p for p, _ in literal), 2))
    texts = literal + tuple((p, draw(st.sampled_from((True, False)))) for p in extra)
    return KvbmSpace(3, len(texts), 2, 2, texts=texts, token=draw(st.just(6) | TOKENS))


# the Hypothesis machine's worlds: three requests over the first five prompts and up to two drawn
# ones sharing their prefixes (with or without prefix caching), growing by two tokens (each 6 or
# a drawn one), decode reservations of two slots, the malformed inputs; PLH fragments reduced
# modulo 2, as the explorer's; it shrinks to the explorer's world widened
WORLDS = _worlds()
KvbmMachine = world_machine("KvbmMachine", WORLDS, {"max_capacity": 3, "plh_fragments": 2})
