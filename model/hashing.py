"""Token-block hashing and ``TokenBlockSequence`` (semantics §3.1, tag TOKENS).

Real code: ``lib/llm/src/tokens.rs``. A block's *block hash* (the router's local /
tokens hash) is XXH3-64 with seed ``salt`` over its tokens as little-endian u32s. The
first block's *sequence hash* is its block hash; a later block's is XXH3-64 with seed
``salt`` over ``parent_sequence_hash (u64 LE) ‖ block_hash (u64 LE)``. The router and
the mocker use salt 1337 (``compute_block_hash_for_seq`` of ``dynamo._core`` returns the
block hashes; the mocker's events carry the sequence hashes).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import attrs
import xxhash

from kvmodel.model.errors import InvalidInput, UnwrapErr

DEFAULT_SALT = 1337
U32_MAX = (1 << 32) - 1


def _tokens(tokens: Iterable[int]) -> list[int]:
    out = list(tokens)
    for t in out:
        if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t <= U32_MAX:
            raise InvalidInput(f"token must be a u32, got {t!r}")
    return out


def block_hash(tokens: Sequence[int], salt: int = DEFAULT_SALT) -> int:
    """XXH3-64(seed=salt) over the tokens as u32 little-endian."""
    toks = _tokens(tokens)
    return int(xxhash.xxh3_64_intdigest(struct.pack(f"<{len(toks)}I", *toks), seed=salt))


def chain_hash(parent_sequence_hash: int, block_hash_: int, salt: int = DEFAULT_SALT) -> int:
    """Sequence hash of a non-first block: XXH3-64(seed=salt) over ``parent ‖ block`` (u64 LE)."""
    return int(xxhash.xxh3_64_intdigest(struct.pack("<QQ", parent_sequence_hash, block_hash_), seed=salt))


def local_block_hashes(tokens: Sequence[int], block_size: int, salt: int = DEFAULT_SALT) -> list[int]:
    """Block hashes of the complete blocks (a trailing partial block is dropped)."""
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise InvalidInput(f"block_size must be a positive integer, got {block_size!r}")
    toks = _tokens(tokens)
    n = len(toks) // block_size
    return [block_hash(toks[i * block_size : (i + 1) * block_size], salt) for i in range(n)]


def sequence_hashes(block_hashes: Iterable[int], salt: int = DEFAULT_SALT) -> list[int]:
    out: list[int] = []
    for h in block_hashes:
        out.append(h if not out else chain_hash(out[-1], h, salt))
    return out


@attrs.frozen
class TokenBlock:
    """A complete block: its tokens, block hash, sequence hash and parent's sequence hash."""

    tokens: tuple[int, ...]
    block_hash: int
    sequence_hash: int
    parent_sequence_hash: int | None


class TokenBlockSequence:
    """``TokenBlockSequence``: complete blocks plus the partial ``current_block``.

    ``new(tokens, block_size, salt)`` (salt ``None`` means 0, as in Rust), ``append``,
    ``pop`` (a no-op on an empty sequence; popping into a complete block un-commits it),
    ``truncate``.
    """

    def __init__(self, tokens: Iterable[int], block_size: int, salt: int | None = None) -> None:
        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
            raise InvalidInput(f"block_size must be a positive integer, got {block_size!r}")
        if salt is not None and (isinstance(salt, bool) or not isinstance(salt, int) or not 0 <= salt < 1 << 64):
            raise InvalidInput(f"salt must be a u64 or None, got {salt!r}")
        self.block_size = block_size
        self.salt = 0 if salt is None else salt
        self._tokens: list[int] = []
        self.blocks: list[TokenBlock] = []
        for t in _tokens(tokens):
            self._push(t)

    def _push(self, t: int) -> None:
        self._tokens.append(t)
        if len(self._tokens) % self.block_size == 0:
            toks = tuple(self._tokens[-self.block_size :])
            bh = block_hash(toks, self.salt)
            parent = self.blocks[-1].sequence_hash if self.blocks else None
            sh = bh if parent is None else chain_hash(parent, bh, self.salt)
            self.blocks.append(TokenBlock(toks, bh, sh, parent))

    def append(self, token: int) -> None:
        self._push(_tokens([token])[0])

    def pop(self) -> int | None:
        if not self._tokens:
            return None
        if len(self._tokens) % self.block_size == 0:
            self.blocks.pop()
        return self._tokens.pop()

    def truncate(self, length: int) -> None:
        if length > len(self._tokens):
            raise UnwrapErr(f"truncate to {length} > {len(self._tokens)} tokens")
        while len(self._tokens) > length:
            self.pop()

    @property
    def tokens(self) -> list[int]:
        return list(self._tokens)

    def total_tokens(self) -> int:
        return len(self._tokens)

    @property
    def current_block(self) -> list[int]:
        return self._tokens[len(self.blocks) * self.block_size :]

    def last_complete_block(self) -> TokenBlock | None:
        return self.blocks[-1] if self.blocks else None
