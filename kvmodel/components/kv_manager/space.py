"""The KV manager's bounded world for the explorer, with its exact symmetry reduction (per-id signatures)."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable
from typing import Any

import attrs

from kvmodel.components.kv_manager.system import KvManagerSystem
from kvmodel.model.blocks import Deref, Destroy, FullBlock, MoveBlock, PartialBlock, Promote, UniqueBlock, Use
from kvmodel.model.errors import InvalidInput, require_naturals
from kvmodel.systems import System


@attrs.frozen
class KvSpace:
    """The KV manager's bounded world: ``n_full`` full blocks (hashes 0 .. n_full-1), ``partials``
    partial blocks (``p0`` ..), Use / Deref / Destroy of lists of up to ``max_batch`` blocks, every
    Promote of a partial to a hash with any parent, and no reference count above ``max_refcount``.

    The explorer and the differential check both draw their moves from it."""

    n_full: int = 3
    partials: int = 1
    max_batch: int = 2
    max_refcount: int = 2

    def __attrs_post_init__(self) -> None:
        require_naturals(self, ("n_full", "partials", "max_batch", "max_refcount"))
        if self.max_batch < 1 or self.max_refcount < 1:
            raise InvalidInput("max_batch and max_refcount must be at least 1")

    def blocks(self) -> list[UniqueBlock]:
        return [FullBlock(h) for h in range(self.n_full)] + [PartialBlock(f"p{i}") for i in range(self.partials)]

    def actions(self) -> list[MoveBlock]:
        alphabet = self.blocks()
        out: list[MoveBlock] = []
        for n in range(1, self.max_batch + 1):
            out += [Use(seq) for seq in itertools.product(alphabet, repeat=n)]
        for n in range(1, self.max_batch + 1):
            out += [Deref(seq) for seq in itertools.product(alphabet, repeat=n)]
            out += [Destroy(seq) for seq in itertools.product(alphabet, repeat=n)]
        for i in range(self.partials):
            for h in range(self.n_full):
                for parent in [None, *range(self.n_full)]:
                    out.append(Promote(f"p{i}", h, parent))
        return out

    def enabled(self, s: KvManagerSystem, sig: MoveBlock) -> bool:
        """The refcount bound: no count (in the model or held by callers) above max_refcount."""
        active, held, r = s.model.active, s.monitor.held, self.max_refcount
        if isinstance(sig, Use):
            for b, m in Counter(sig.blocks).items():
                if max(active.get(b, 0), held.get(b, 0)) + m > r:
                    return False
        elif isinstance(sig, Promote):
            p, f = PartialBlock(sig.uuid), FullBlock(sig.hash)
            if active.get(p, 0) + active.get(f, 0) > r or held.get(p, 0) + held.get(f, 0) > r:
                return False
        return True

    def to_json(self) -> dict[str, int]:
        return attrs.asdict(self)

    # -- the generic interface the explorer drives (see ``Space``)
    component = "kv_manager"

    def system(self, config: dict[str, Any], quirks: Iterable[str]) -> System:
        return KvManagerSystem(config, list(quirks))

    def moves(self) -> list[Any]:
        return list(self.actions())

    def concrete(self, s: System, move: Any) -> tuple[str, Any, Any]:
        """(op, decoded arguments, JSON arguments) of a move in state ``s``."""
        return "process", move, move.to_json()

    def allows(self, s: System, move: Any) -> bool:
        assert isinstance(s, KvManagerSystem)
        return self.enabled(s, move)

    def key(self, s: System, symmetry: bool) -> bytes:
        assert isinstance(s, KvManagerSystem)
        return canonical(s, self, symmetry)

    def orbit(self, key: Any) -> int:
        return orbit_size(key, self)

    def move_kind(self, move: Any) -> str:
        return type(move).__name__


Sig = tuple[int, int, bool, bool, int]


_BLOCKS: dict[tuple[int, int], tuple[list[tuple[int, FullBlock]], list[PartialBlock]]] = {}


def _universe(space: KvSpace) -> tuple[list[tuple[int, FullBlock]], list[PartialBlock]]:
    """The space's block objects, built once (hashing fresh attrs objects dominated the search)."""
    k = (space.n_full, space.partials)
    if k not in _BLOCKS:
        _BLOCKS[k] = (
            [(h, FullBlock(h)) for h in range(space.n_full)],
            [PartialBlock(f"p{i}") for i in range(space.partials)],
        )
    return _BLOCKS[k]


def signatures(s: KvManagerSystem, space: KvSpace) -> tuple[list[Sig], list[Sig]]:
    """Per-id signatures: (refcount, LRU position or -1, resident, in router view, held)."""
    m, mon = s.model, s.monitor
    active, res, view, held = m.active, m.all_blocks, mon.view, mon.held
    pos = {b: i for i, b in enumerate(m.inactive.order())}
    fb, pb = _universe(space)
    fulls: list[Sig] = [(active.get(b, 0), pos.get(b, -1), b in res, h in view, held.get(b, 0)) for h, b in fb]
    parts: list[Sig] = [(active.get(b, 0), pos.get(b, -1), b in res, False, held.get(b, 0)) for b in pb]
    return fulls, parts


SIG_BYTES = 5


def _pack(sigs: Iterable[Sig]) -> bytes:
    return bytes(x for r, p, a, v, h in sigs for x in (r, p + 1, a, v, h))


def canonical(s: KvManagerSystem, space: KvSpace, symmetry: bool) -> bytes:
    """The state as a compact byte string: 5 bytes per id, sorted per group with symmetry."""
    fulls, parts = signatures(s, space)
    if symmetry:
        fulls.sort()
        parts.sort()
    return _pack(fulls) + _pack(parts)


def orbit_size(key: bytes, space: KvSpace) -> int:
    """How many concrete states a canonical key stands for (multinomial of equal signatures)."""
    cut = space.n_full * SIG_BYTES
    total = 1
    for group in (key[:cut], key[cut:]):
        chunks = [group[i : i + SIG_BYTES] for i in range(0, len(group), SIG_BYTES)]
        n = math.factorial(len(chunks))
        for c in Counter(chunks).values():
            n //= math.factorial(c)
        total *= n
    return total
