"""The new-era ``ActiveSequence`` and the G1 ``MoveBlock`` signals it produces (§2.1, §2.2).

Real code: ``lib/mocker/src/common/sequence.rs`` (commit 6125e8260) and the G1 ``MoveBlock``
(``Use(blocks, local_hashes, plhs, token_ids, parent)``, ``Deref(blocks)``,
``Promote(uuid, seq_hash, parent_hash, local_hash, plh, token_ids)``; no Destroy).

Hashes are the real mocker's (``dynamo-runtime.md`` §2.5): a block's local hash is XXH3-64
of its tokens (little-endian u32, seed 1337) and its sequence hash chains the parent's
sequence hash with it; PLHs are ``(sequence hash, parent sequence hash, position)``
triples. With prefix caching off the sequence and PLH hashes are random (seeded: the same
sequence name, generation and seed give the same values; a system gives each new sequence the
first generation whose draws the manager holds none of, :func:`fresh_generation`, so no two
sequences share them), local hashes are absent and token ids are never emitted. Partial blocks
are named ``<name>.u<k>`` in creation order.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterable
from typing import Any

import attrs

from kvmodel.model.blocks import FullBlock, PartialBlock, UniqueBlock
from kvmodel.model.errors import BlockSizeTooSmall, InvalidInput
from kvmodel.model.hashing import DEFAULT_SALT, chain_hash, local_block_hashes

PLH = tuple[int, int | None, int]  # (sequence hash, parent sequence hash, position)


def plh_order(plh: PLH) -> tuple[int, int, int, int]:
    """A total order of PLHs for the keys (a parent may be ``None``, which does not compare with
    an integer): by sequence hash, then no parent before a parent, then parent, then position."""
    parent = plh[1]
    return (plh[0], 0, 0, plh[2]) if parent is None else (plh[0], 1, parent, plh[2])


def by_plh(item: tuple[PLH, Any]) -> tuple[int, int, int, int]:
    """The sort key of a ``(PLH, value)`` pair: :func:`plh_order` of its PLH."""
    return plh_order(item[0])


@attrs.frozen
class G1Use:
    blocks: tuple[UniqueBlock, ...]
    local_hashes: tuple[int, ...] = ()
    plhs: tuple[PLH, ...] = ()
    token_ids: tuple[tuple[int, ...], ...] | None = None
    parent: UniqueBlock | None = None
    # Not in the Rust signal: whether the sequence has prefix caching on. The faithful KVBM
    # backend ignores it (§6 #13); the ideal one publishes nothing for uncacheable blocks.
    cacheable: bool = True

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "blocks": [b.to_json() for b in self.blocks],
            "local_hashes": list(self.local_hashes),
            "plhs": [{"seq": s, "parent": p, "pos": k} for s, p, k in self.plhs],
            "token_ids": None if self.token_ids is None else [list(t) for t in self.token_ids],
            "parent": None if self.parent is None else self.parent.to_json(),
        }
        if not self.cacheable:
            out["cacheable"] = False
        return {"Use": out}


@attrs.frozen
class G1Deref:
    blocks: tuple[UniqueBlock, ...]

    def to_json(self) -> dict[str, Any]:
        return {"Deref": [b.to_json() for b in self.blocks]}


@attrs.frozen
class G1Promote:
    uuid: str
    seq_hash: int
    parent_hash: int | None
    local_hash: int | None = None
    plh: PLH | None = None
    token_ids: tuple[int, ...] | None = None
    cacheable: bool = True  # see G1Use.cacheable

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "uuid": self.uuid,
            "seq_hash": self.seq_hash,
            "parent_hash": self.parent_hash,
            "local_hash": self.local_hash,
            "plh": None if self.plh is None else {"seq": self.plh[0], "parent": self.plh[1], "pos": self.plh[2]},
            "token_ids": None if self.token_ids is None else list(self.token_ids),
        }
        if not self.cacheable:
            out["cacheable"] = False
        return {"Promote": out}


G1Signal = G1Use | G1Deref | G1Promote


def _block(obj: Any) -> UniqueBlock:
    from kvmodel.model.blocks import block_from_json

    return block_from_json(obj)


def signal_from_json(obj: Any) -> G1Signal:
    """Decode a G1 ``MoveBlock`` from its JSON form (traces, vectors)."""
    if not isinstance(obj, dict) or len(obj) != 1:
        raise InvalidInput(f"a G1 MoveBlock is one of Use, Deref, Promote, got {obj!r}")
    ((k, v),) = obj.items()
    if k == "Use" and isinstance(v, dict) and "blocks" in v:
        plhs = tuple((p["seq"], p.get("parent"), p["pos"]) for p in v.get("plhs") or [])
        toks = v.get("token_ids")
        return G1Use(
            tuple(_block(b) for b in v["blocks"]),
            tuple(v.get("local_hashes") or ()),
            plhs,
            None if toks is None else tuple(tuple(t) for t in toks),
            None if v.get("parent") is None else _block(v["parent"]),
            bool(v.get("cacheable", True)),
        )
    if k == "Deref" and isinstance(v, list):
        return G1Deref(tuple(_block(b) for b in v))
    if k == "Promote" and isinstance(v, dict):
        plh = v.get("plh")
        toks = v.get("token_ids")
        return G1Promote(
            v["uuid"],
            v["seq_hash"],
            v.get("parent_hash"),
            v.get("local_hash"),
            None if plh is None else (plh["seq"], plh.get("parent"), plh["pos"]),
            None if toks is None else tuple(toks),
            bool(v.get("cacheable", True)),
        )
    raise InvalidInput(f"not a G1 MoveBlock: {obj!r}")


def random_seed(seed: int, name: str, generation: int) -> str:
    """The seed of a caching-disabled sequence's generator: its name and its *generation*."""
    return f"{seed}:{name}" if generation == 0 else f"{seed}:{name}#{generation}"


DRAWS = 4096  # blocks per sequence whose random hashes a freshness check looks at


@functools.lru_cache(maxsize=4096)
def random_draws(seed: int, name: str, generation: int) -> frozenset[int]:
    """The first :data:`DRAWS` sequence hashes and (unreduced) PLH hashes a caching-disabled
    sequence of this name and generation draws (``_complete_blocks`` draws them in pairs)."""
    g = random.Random(random_seed(seed, name, generation))
    return frozenset(g.getrandbits(64) for _ in range(2 * DRAWS))


def fresh_generation(name: str, in_use: Any, seed: int = 0) -> int:
    """The least generation of the caching-disabled sequence ``name`` none of whose random hashes
    is ``in_use`` (a set of the values the manager holds).

    Rust's caching-disabled ``ActiveSequence`` draws fresh random sequence hashes and PLHs for
    every new sequence (``lib/mocker/src/common/sequence.rs``: ``create_unique_blocks_from_sequence``,
    ``promote_last_partial``): such blocks are never shared. The model's draws are seeded, and a
    request id is reused after ``free``; so a new sequence takes the first generation whose draws
    the manager holds none of: a fresh draw, as a function of the state (the explorer needs one).
    (Fresh against the manager and the other requests: a hash the router's view still holds
    after the manager dropped it without a Removed, which only a quirk does, may be drawn again.)
    """
    g = 0
    while random_draws(seed, name, g) & in_use:
        g += 1
    return g


class ActiveSequence:
    """``ActiveSequence::new(tokens, max_output_tokens, block_size, enable_prefix_caching, emit_token_ids)``."""

    def __init__(
        self,
        tokens: Iterable[int],
        max_output_tokens: int,
        block_size: int = 64,
        enable_prefix_caching: bool = True,
        emit_token_ids: bool = False,
        *,
        name: str = "S",
        seed: int = 0,
        plh_fragments: int = 0,
        generation: int = 0,
    ) -> None:
        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 0:
            raise InvalidInput(f"block_size must be a usize, got {block_size!r}")
        if block_size < 2:
            raise BlockSizeTooSmall(f"block_size = {block_size}")
        self.name, self.block_size, self.max_output_tokens = name, block_size, max_output_tokens
        # PositionalLineageHash keeps 59/55/51-bit fragments of the current and parent hashes;
        # ``plh_fragments > 0`` reduces them modulo that number so that small worlds reach the
        # collisions (two sequence hashes sharing a PLH) the real width makes rare (the hashed
        # PLHs of a caching sequence only).
        self.plh_fragments = plh_fragments
        self.caching = bool(enable_prefix_caching)
        self.emit_token_ids = bool(emit_token_ids) and self.caching
        # the generator is made at its first draw, from the same seed (most sequences never draw:
        # copying its state dominated the explorer's cloning)
        self._seed = random_seed(seed, name, generation)
        self.generation = generation
        self._gen: random.Random | None = None
        self._uuids = 0
        self.tokens: list[int] = list(tokens)
        self.num_input_tokens = len(self.tokens)
        self.num_allocated_tokens = 0
        self.generated_tokens = 0
        self.seq_hashes: list[int] = []
        self.local_hashes: list[int] = []
        self.plhs: list[PLH] = []
        self.unique: list[UniqueBlock] = []
        self._complete_blocks()
        self.unique = [FullBlock(h) for h in self.seq_hashes]
        if len(self.tokens) % block_size:
            self.unique.append(self._fresh_partial())

    def copy(self) -> ActiveSequence:
        c = ActiveSequence.__new__(ActiveSequence)
        c.__dict__.update(self.__dict__)
        if self._gen is not None:
            c._gen = random.Random()
            c._gen.setstate(self._gen.getstate())
        for k in ("tokens", "seq_hashes", "local_hashes", "plhs", "unique"):
            setattr(c, k, list(getattr(self, k)))
        return c

    @property
    def _rng(self) -> random.Random:
        """The sequence's seeded generator (seed ``"<seed>:<name>"``), made at its first use."""
        if self._gen is None:
            self._gen = random.Random(self._seed)
        return self._gen

    # -- hashing
    def _complete_blocks(self) -> None:
        """Hash every full block not hashed yet."""
        n_full = len(self.tokens) // self.block_size
        while len(self.seq_hashes) < n_full:
            i = len(self.seq_hashes)
            toks = self.tokens[i * self.block_size : (i + 1) * self.block_size]
            parent = self.seq_hashes[i - 1] if i else None
            if self.caching:
                (lh,) = local_block_hashes(toks, self.block_size, DEFAULT_SALT)
                sh = lh if parent is None else chain_hash(parent, lh, DEFAULT_SALT)
                self.local_hashes.append(lh)
                plh: PLH = (sh, parent, i)
            else:
                sh = self._rng.getrandbits(64)
                plh = (self._rng.getrandbits(64), None, i)
            if self.plh_fragments and self.caching:
                # (a caching-disabled sequence's random PLH stays whole: Rust's two random draws
                # collide with negligible odds, and reduced ones would make a fresh draw collide
                # with the earlier sequences' at once)
                f = self.plh_fragments
                plh = (plh[0] % f, None if plh[1] is None else plh[1] % f, i)
            self.plhs.append(plh)
            self.seq_hashes.append(sh)

    def _fresh_partial(self) -> PartialBlock:
        p = PartialBlock(f"{self.name}.u{self._uuids}")
        self._uuids += 1
        return p

    def block_tokens(self, i: int) -> tuple[int, ...]:
        return tuple(self.tokens[i * self.block_size : (i + 1) * self.block_size])

    def __len__(self) -> int:
        return len(self.tokens)

    # -- allocation signals
    def prepare_allocation(self, cum: int) -> G1Use | None:
        """The Use that allocates blocks up to ``cum`` tokens beyond the watermark (pure)."""
        bs = self.block_size
        prev = min(-(-self.num_allocated_tokens // bs), len(self.unique))
        target = min(-(-cum // bs), len(self.unique))
        if target <= prev:
            return None
        blocks = tuple(self.unique[prev:target])
        idx = [i for i in range(prev, target) if isinstance(self.unique[i], FullBlock)]
        return G1Use(
            blocks,
            tuple(self.local_hashes[i] for i in idx) if self.caching else (),
            tuple(self.plhs[i] for i in idx),
            tuple(self.block_tokens(i) for i in idx) if self.emit_token_ids else None,
            self.unique[prev - 1] if prev > 0 else None,
            self.caching,
        )

    def commit_allocation(self, cum: int) -> None:
        self.num_allocated_tokens = cum

    def take_creation_signal(self) -> G1Use | None:
        sig = self.prepare_allocation(len(self.tokens))
        self.commit_allocation(len(self.tokens))
        return sig

    def _promote_tail(self) -> G1Promote | None:
        """Promote the trailing partial (if it is still partial and its block is complete)."""
        if not self.unique or not isinstance(self.unique[-1], PartialBlock):
            return None
        i = len(self.unique) - 1
        if i >= len(self.seq_hashes):
            return None
        uuid = self.unique[-1].uuid
        self.unique[-1] = FullBlock(self.seq_hashes[i])
        parent = self.unique[i - 1] if i else None
        return G1Promote(
            uuid,
            self.seq_hashes[i],
            parent.hash if isinstance(parent, FullBlock) else None,
            self.local_hashes[i] if self.caching else None,
            self.plhs[i],
            self.block_tokens(i) if self.emit_token_ids else None,
            self.caching,
        )

    def push(self, token: int) -> list[G1Signal] | None:
        """Append a token; at the first token of a new block: Promote the completed tail (if
        still partial) and Use a new partial."""
        self.tokens.append(token)
        self._complete_blocks()
        if len(self.tokens) % self.block_size != 1:
            return None
        out: list[G1Signal] = []
        p = self._promote_tail()
        if p is not None:
            out.append(p)
        partial = self._fresh_partial()
        self.unique.append(partial)
        out.append(G1Use((partial,)))
        return out

    def promote_computed_tail(self, cum_computed: int) -> G1Promote | None:
        """Native eager boundary: promote the partial tail as soon as it is computed."""
        if cum_computed == 0 or cum_computed != len(self.tokens) or cum_computed % self.block_size:
            return None
        return self._promote_tail()

    def _release(self, tokens: int) -> G1Deref:
        n = min(-(-tokens // self.block_size), len(self.unique))
        return G1Deref(tuple(reversed(self.unique[:n])))

    def free_signal(self) -> G1Deref:
        """Release what was allocated (leaf first); the watermark goes back to 0."""
        sig = self._release(self.num_allocated_tokens)
        self.num_allocated_tokens = 0
        return sig

    def terminal_signal(self) -> G1Deref:
        return self._release(len(self.tokens))

    def reset_with_signal(self) -> list[G1Signal]:
        """Preemption: release what was allocated (leaf first) and zero the watermark; the
        generated tokens stay."""
        return [self.free_signal()]

    def generate(self) -> list[G1Signal]:
        """Generate one output token (seeded) and push it; the push's signals."""
        if self.generated_tokens >= self.max_output_tokens:
            raise InvalidInput(f"{self.name}: already generated {self.max_output_tokens} tokens")
        self.generated_tokens += 1
        return self.push(self._rng.randrange(1 << 16)) or []
