"""The G1 KVBM backend's bounded world for the explorer: request-level moves."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from kvmodel.components.g1_kvbm.actions import (
    ActivateDestination,
    Allocate,
    BadDeref,
    BadUse,
    DecodePush,
    NewRequest,
    Push,
    Resend,
    ReserveDecode,
    ReserveDestination,
)
from kvmodel.components.g1_requests import CancelDestination, Free, G1Moves, ReleaseDecode
from kvmodel.explorer import NoSymmetry, owner_canonical
from kvmodel.model.errors import InvalidInput, require_naturals
from kvmodel.systems import System

if TYPE_CHECKING:
    from kvmodel.components.g1_kvbm.system import G1KvbmSystem

# (tokens, prefix caching): two full blocks; a block whose PLH collides with the first one's
# when fragments are reduced modulo 2 (a different sequence hash, the same PLH); a
# caching-disabled block (random hashes); a block with another PLH and a partial; the first
# prompt and a partial (three blocks: more than a capacity-2 world holds).
KVBM_PROMPTS: tuple[tuple[tuple[int, ...], bool], ...] = (
    ((1, 2, 3, 4), True),
    ((7, 8), True),
    ((9, 10), False),
    ((15, 16, 5), True),
    ((1, 2, 3, 4, 5), True),
)


# per (world, PLH fragments, block size): the world's hash renaming (``KvbmSpace.hash_renaming``)
_RENAMINGS: dict[tuple[Any, int, int], Any] = {}


@attrs.frozen
class KvbmSpace(G1Moves, NoSymmetry):
    """Bounded G1 world with the KVBM backend (capacity 3, block size 2, PLH fragments modulo
    2): ``owners`` requests started from one of ``prompts`` prompts, growing by ``pushes``
    tokens; at most one decode reservation of ``decode`` slots; destinations; a request's
    blocks named again (``resend``); and the malformed inputs (``bad_use``, ``bad_deref``)."""

    component = "g1_kvbm"
    owners: int = 2
    prompts: int = 3
    pushes: int = 1
    decode: int = 0
    bad: bool = True

    def __attrs_post_init__(self) -> None:
        require_naturals(self, ("owners", "prompts", "pushes", "decode"))
        if self.prompts > len(KVBM_PROMPTS):
            raise InvalidInput(f"at most {len(KVBM_PROMPTS)} prompts")

    def to_json(self) -> dict[str, int]:
        return {k: int(v) for k, v in attrs.asdict(self).items()}

    def symmetric(self, s: Any) -> bool:
        """Whether requests are interchangeable in this world, for the system ``s`` (its
        configuration decides the hashes). Always where every prompt caches. The
        caching-disabled prompt's sequence and PLH hashes are drawn from a generator seeded with
        the sequence's name (``model/g1/sequence.py``), so renaming a request renames its draws:
        interchangeable where :meth:`hash_renaming` found that renaming to be a symmetry."""
        if all(c for _, c in KVBM_PROMPTS[: self.prompts]):
            return True
        return getattr(s, "hash_renaming", None) is not None

    def hash_renaming(self, s: Any) -> Any:
        """The table of the requests' caching-disabled draws (``system.HashRenaming``) where
        renaming the requests, their draws with them, is a symmetry of this world; ``None``
        where it is not, or where no prompt is caching-disabled.

        Request ``o``'s caching-disabled sequence (named ``r<o>``) draws, per full block, a
        sequence hash and a PLH fragment; a request holds at most the longest such prompt plus
        ``pushes`` tokens. Renaming request ``o`` to ``p`` maps ``o``'s sequence hashes onto
        ``p``'s, block by block, in every place the state holds a hash. That is a bijection
        that leaves everything else as it is when every request draws the same PLHs (the PLH
        fragments are not renamed: with ``plh_fragments`` 2 the first blocks' fragments agree
        for requests 0-2) and no drawn hash equals another drawn one or a caching prompt's;
        and the model treats hashes alike (no behaviour reads a hash's value but to compare it
        with another: the search with symmetry is compared with the one without in the tests)."""
        free = [list(t) for t, c in KVBM_PROMPTS[: self.prompts] if not c]
        if not free:
            return None
        from kvmodel.components.g1_kvbm.system import HashRenaming

        longest = max(len(t) for t in free) + self.pushes
        # a request's sequence of generation g (``fresh_generation``) draws its own hashes; a
        # generation above 0 is taken only while an earlier one's blocks stay in the manager, so
        # at most capacity + 1 of them occur
        gens = range(int(s.config["max_capacity"]) + 2)
        drawn: list[tuple[list[int], list[Any]]] = []
        for o in range(self.owners):
            hs: list[int] = []
            plhs: list[Any] = []
            for g in gens:
                h, p = s.sequence_hashes(o, [6] * longest, False, g)
                hs += h
                plhs += p
            drawn.append((hs, plhs))
        if any(plhs != drawn[0][1] for _, plhs in drawn):
            return None
        flat = [h for hs, _ in drawn for h in hs]
        cached: set[int] = set()
        for t, c in KVBM_PROMPTS[: self.prompts]:
            if c:
                cached.update(s.sequence_hashes(0, [*t, *[6] * self.pushes], True)[0])
        if len(set(flat)) != len(flat) or cached & set(flat):
            return None
        return HashRenaming(tuple(tuple(hs) for hs, _ in drawn))

    def key(self, s: System, symmetry: bool) -> Any:
        """With symmetry in a world where requests are interchangeable (:meth:`symmetric`): the
        least of the state's keys under every renaming of the requests, with the orbit's size
        (``explorer.owner_canonical``); else the system's key."""
        return owner_canonical(s, self.owners) if symmetry and self.symmetric(s) else (1, s.key())

    def orbit(self, key: Any) -> int:
        return int(key[0])

    def _uncached(self) -> bool:
        """Whether the world holds the caching-disabled prompt (the third)."""
        return any(not c for _, c in KVBM_PROMPTS[: self.prompts])

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

        s = G1KvbmSystem({"max_capacity": 3, "plh_fragments": 2, **config}, list(quirks))
        # the draws depend on the world and the sequences' shape only (a machine builds a system
        # per example)
        shape = (self, s.config["plh_fragments"], s.model.block_size)
        if shape not in _RENAMINGS:
            _RENAMINGS[shape] = self.hash_renaming(s)
        s.hash_renaming = _RENAMINGS[shape]
        return s

    def moves(self) -> list[Any]:
        """The world's action instances, in the order the search tries them."""
        os_, ps = range(self.owners), range(self.prompts)
        out: list[Any] = [NewRequest(o, list(KVBM_PROMPTS[p][0]), KVBM_PROMPTS[p][1]) for o in os_ for p in ps]
        out += [Allocate(o) for o in os_]
        out += [Push(o, 6) for o in os_]
        out += [c(o) for c in (Resend, Free) for o in os_]
        if self.decode:
            out += [ReserveDecode(self.decode), ReleaseDecode()]
            out += [DecodePush(o, 6) for o in os_]
        out += [ReserveDestination(o, list(KVBM_PROMPTS[p][0]), KVBM_PROMPTS[p][1]) for o in os_ for p in ps]
        out += [c(o) for c in (ActivateDestination, CancelDestination) for o in os_]
        if self.bad:
            out += [BadUse("dup_partial"), BadUse("hash_two_plhs")]
            out += [BadDeref(o) for o in os_]
        return out

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
