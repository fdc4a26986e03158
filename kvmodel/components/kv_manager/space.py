"""The KV manager's bounded world for the explorer, with its exact symmetry reduction (per-id signatures)."""

from __future__ import annotations

import itertools
import math
import operator
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from kvmodel.components.kv_manager.actions import GetPrefillCost, Process
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

    def queries(self) -> list[GetPrefillCost]:
        """The prefill-cost queries of sequences of up to ``max_batch`` distinct full blocks, each
        with one full block's tokens per block (``block_size`` 16, the default): what
        ``kv.prefill_cost_longest_prefix`` speaks of. A query changes no state."""
        fulls = [FullBlock(h) for h in range(self.n_full)]
        out = []
        for n in range(1, self.max_batch + 1):
            out += [GetPrefillCost(seq, 16 * n) for seq in itertools.permutations(fulls, n)]
        return out

    def enabled(self, s: KvManagerSystem, sig: MoveBlock | GetPrefillCost) -> bool:
        """The refcount bound: no count (in the model or held by callers) above max_refcount."""
        active, held, r = s.model.active, s.monitor.held, self.max_refcount
        if isinstance(sig, Use):
            blocks = sig.blocks
            for b in blocks:  # a batch of at most max_batch: counting in place beats a Counter
                if max(active.get(b, 0), held.get(b, 0)) + blocks.count(b) > r:
                    return False
        elif isinstance(sig, Promote):
            p, f = PartialBlock(sig.uuid), FullBlock(sig.hash)
            if active.get(p, 0) + active.get(f, 0) > r or held.get(p, 0) + held.get(f, 0) > r:
                return False
        return True

    def to_json(self) -> dict[str, int]:
        return attrs.asdict(self)

    def bounds(self) -> list[str]:
        """What the world bounds that the real code does not (``kvmodel explore`` reports it)."""
        return [
            f"no reference count, in the manager or held by callers, above max_refcount={self.max_refcount}: "
            "a Use or Promote that would pass it is disabled",
            f"Use, Deref and Destroy name at most max_batch={self.max_batch} blocks, of {self.n_full} full ids "
            f"and {self.partials} partial names",
        ]

    # -- the generic interface the explorer drives (see ``Space``)
    component = "kv_manager"

    def system(self, config: dict[str, Any], quirks: Iterable[str]) -> System:
        return KvManagerSystem(config, list(quirks))

    def moves(self) -> list[Any]:
        return [*self.actions(), *self.queries()]

    # a move decodes to the same action in every state: the explorer decodes each once
    state_free_moves = True

    def concrete(self, s: System, move: Any) -> tuple[str, Any, Any]:
        """(op, decoded arguments, JSON arguments) of a move, in any state ``s``."""
        if isinstance(move, GetPrefillCost):
            return move.op, move, move.to_json()
        return "process", Process(move), move.to_json()

    def allows(self, s: System, move: Any) -> bool:
        assert isinstance(s, KvManagerSystem)
        return self.enabled(s, move)

    def guarded(self, move: Any) -> bool:
        """Whether :meth:`allows` can refuse the move in some state: only a Use or a Promote can
        pass the refcount bound (the explorer asks the guard of these alone)."""
        return isinstance(move, Use | Promote)

    def key(self, s: System, symmetry: bool) -> bytes:
        assert isinstance(s, KvManagerSystem)
        return canonical(s, self, symmetry)

    def orbit(self, key: Any) -> int:
        return orbit_size(key, self)

    def move_kind(self, move: Any) -> str:
        return type(move).__name__

    def move_classes(self, s: System, moves: list[Any]) -> list[tuple[int, int]]:
        """The moves up to the state's own symmetries, as (index of the first move of each class,
        size of the class), in index order.

        Two ids with equal signatures (:func:`signatures`) can be swapped without changing the
        state's key, so a move and its image under the swap lead to states with the same canonical
        key, are allowed alike and break the same invariants (the reduction of :func:`canonical`
        rests on the same equivariance). A move's class is its type and, for each id it names, the
        id's signature and its rank among the distinct ids the move names (``Use([a, a])`` and
        ``Use([a, b])`` differ). The first move of a class is the one the unreduced search would
        meet first, so a search that expands only these finds the same parents, depths and
        counterexamples; the explorer weights each by its class size, so its transition and
        coverage counts are those of the unreduced expansion."""
        assert isinstance(s, KvManagerSystem)
        fulls, parts = signatures(s, self)
        labels: dict[tuple[bool, Sig], int] = {}
        lab = [labels.setdefault((False, g), len(labels)) for g in fulls] + [
            labels.setdefault((True, g), len(labels)) for g in parts
        ]
        if len(labels) == len(lab):  # no two ids alike: every class is a single move
            return [(i, 1) for i in range(len(moves))]
        # the classes depend only on which ids are alike (the labels, numbered in order of first
        # appearance) and on the moves: states alike in that share them
        memo = _CLASSES.setdefault(self, {})
        alike = (len(moves), *lab)
        got = memo.get(alike)
        if got is not None:
            return got
        classes: dict[tuple[int, Any], list[int]] = {}
        for mi, (pattern, names) in enumerate(_move_forms(self, moves)):
            form = (pattern, names(lab))
            c = classes.get(form)
            if c is None:
                classes[form] = [mi, 1]
            else:
                c[1] += 1
        got = [(c[0], c[1]) for c in classes.values()]
        if len(memo) < _CLASSES_KEPT:
            memo[alike] = got
        return got


Sig = tuple[int, int, bool, bool, int]

_TAGS = {Use: 0, Deref: 1, Destroy: 2, Promote: 3, GetPrefillCost: 4}
_INDEX: dict[KvSpace, dict[UniqueBlock, int]] = {}  # each block of the space -> its id
_MOVE_FORMS: dict[KvSpace, list[tuple[int, Callable[[list[int]], Any]]]] = {}
# per space, the move classes of each pattern of alike ids met (``KvSpace.move_classes``): at most
# this many patterns kept per space (a wide space has more patterns than states worth keeping)
_CLASSES: dict[KvSpace, dict[tuple[int, ...], list[tuple[int, int]]]] = {}
_CLASSES_KEPT = 4096


def _move_forms(space: KvSpace, moves: list[Any]) -> list[tuple[int, Callable[[list[int]], Any]]]:
    """What a move's class depends on, split into the part fixed by the move (its type tag and,
    for each id it names, the id's rank among the distinct ids it names, or -1 for no parent:
    numbered) and a getter of the labels of its distinct ids, first occurrence first. Full ``h``
    is id ``h``, partial ``p<i>`` is ``n_full + i``. Built once per space."""
    got = _MOVE_FORMS.get(space)
    if got is None or len(got) != len(moves):

        def ix(b: UniqueBlock) -> int:
            return b.hash if isinstance(b, FullBlock) else space.n_full + int(b.uuid[1:])

        patterns: dict[tuple[int, ...], int] = {}
        got = []
        for m in moves:
            if isinstance(m, Promote):
                ids: tuple[int, ...] = (
                    space.n_full + int(m.uuid[1:]),
                    m.hash,
                    -1 if m.parent_hash is None else m.parent_hash,
                )
            elif isinstance(m, GetPrefillCost):
                ids = tuple(ix(b) for b in m.unique_blocks)
            else:
                ids = tuple(ix(b) for b in m.blocks)
            distinct = list(dict.fromkeys(x for x in ids if x >= 0))
            shape = (_TAGS[type(m)], *(-1 if x < 0 else distinct.index(x) for x in ids))
            got.append((patterns.setdefault(shape, len(patterns)), operator.itemgetter(*distinct)))
        _MOVE_FORMS[space] = got
    return got


def signatures(s: KvManagerSystem, space: KvSpace) -> tuple[list[Sig], list[Sig]]:
    """Per-id signatures: (refcount, 1 + LRU position or 0 if not inactive, resident, in router
    view, held) — the bytes of the canonical key (:func:`_signature_bytes`), full ids then
    partial ones."""
    buf = _signature_bytes(s, space)
    sigs = [(buf[i], buf[i + 1], buf[i + 2] == 1, buf[i + 3] == 1, buf[i + 4]) for i in range(0, len(buf), SIG_BYTES)]
    return sigs[: space.n_full], sigs[space.n_full :]


SIG_BYTES = 5


def _signature_bytes(s: KvManagerSystem, space: KvSpace) -> bytearray:
    """Every id's signature as ``SIG_BYTES`` bytes, in id order (a full block's id is its hash,
    a partial's its name's number, looked up in a table of the space's blocks).

    Built by walking the model's few entries rather than probing every id. Only the space's
    blocks can be in the model (every move names them), which the lookup asserts; a count
    above 255 does not fit a byte (``ValueError``: the space bounds refcounts far below)."""
    m, mon = s.model, s.monitor
    nf, n = space.n_full, space.n_full + space.partials
    index = _INDEX.get(space)
    if index is None:
        index = _INDEX[space] = {b: i for i, b in enumerate(space.blocks())}
    buf = bytearray(SIG_BYTES * n)
    full = FullBlock
    # a full block's id is its hash (read straight off it, without hashing the block); a partial's
    # and any block outside the space are looked up (the lookup's KeyError is the assertion)
    try:
        for b, c in m.active.items():
            buf[SIG_BYTES * (b.hash if type(b) is full and 0 <= b.hash < nf else index[b])] = c
        for i, b in enumerate(m.inactive.ordered(), 1):
            buf[SIG_BYTES * (b.hash if type(b) is full and 0 <= b.hash < nf else index[b]) + 1] = i
        for b in m.all_blocks:
            buf[SIG_BYTES * (b.hash if type(b) is full and 0 <= b.hash < nf else index[b]) + 2] = 1
        for b, c in mon.held.items():
            buf[SIG_BYTES * (b.hash if type(b) is full and 0 <= b.hash < nf else index[b]) + 4] = c
    except KeyError as e:
        raise AssertionError(f"{e.args[0]} is not in the space") from None
    for h in mon.view:
        if 0 <= h < nf:
            buf[SIG_BYTES * h + 3] = 1
    return buf


def canonical(s: KvManagerSystem, space: KvSpace, symmetry: bool) -> bytes:
    """The state as a compact byte string: 5 bytes per id (its :func:`signatures` entry), the
    ids' chunks sorted per group (full, partial) with symmetry — bytes sort as the signature
    tuples do."""
    buf = _signature_bytes(s, space)
    if not symmetry:
        return bytes(buf)
    cut, end = SIG_BYTES * space.n_full, len(buf)
    fulls = sorted(buf[i : i + SIG_BYTES] for i in range(0, cut, SIG_BYTES))
    parts = sorted(buf[i : i + SIG_BYTES] for i in range(cut, end, SIG_BYTES))
    return b"".join(fulls) + b"".join(parts)


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


def agreement() -> tuple[dict[str, Any], list[Any]]:
    """The Z3 agreement runs of the mutation benchmark: a capacity-2 world and every move of
    three full blocks, one partial and batches of two."""
    return {"max_capacity": 2, "n_full": 3, "partials": 1, "max_batch": 2}, [
        Process(a) for a in KvSpace(3, 1, 2, 2).actions()
    ]
