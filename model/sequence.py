"""The old mocker's ``ActiveSequence`` (semantics §1.5, tag OLDSEQ).

Real code: ``lib/llm/src/mocker/sequence.rs`` (commit f0652d89f: ``Use(Vec<UniqueBlock>)``,
three-field ``Promote``). It turns a request's tokens into MoveBlock signals for the KV
manager: a ``Use`` of its unique blocks at creation, ``Promote`` + ``Use`` when the first
token of a new block arrives (one token *late*), and ``Deref``/``Destroy`` of every unique
block, last first, when it is freed.

Randomness (fresh partial UUIDs, random hashes with prefix caching off, generated
tokens) is deterministic: partial blocks are named ``<name>.u<k>`` in creation order, and
the rest comes from a ``random.Random`` seeded with ``(seed, name)``.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from kvmodel.model.blocks import Deref, Destroy, FullBlock, MoveBlock, PartialBlock, Promote, UniqueBlock, Use
from kvmodel.model.errors import BlockSizeTooSmall, GenerateLimit, InvalidInput, PartialParent, UnwrapNone
from kvmodel.model.hashing import DEFAULT_SALT, TokenBlockSequence


class ActiveSequence:
    """``ActiveSequence::new(tokens, max_output_tokens, block_size = 64, enable_prefix_caching)``."""

    def __init__(
        self,
        tokens: Iterable[int],
        max_output_tokens: int,
        block_size: int | None = None,
        enable_prefix_caching: bool = True,
        *,
        name: str = "seq",
        seed: int = 0,
    ) -> None:
        bs = 64 if block_size is None else block_size
        if isinstance(bs, bool) or not isinstance(bs, int) or bs < 0:
            raise InvalidInput(f"block_size must be a usize, got {bs!r}")
        if bs <= 1:
            raise BlockSizeTooSmall(f"block_size = {bs}")
        if isinstance(max_output_tokens, bool) or not isinstance(max_output_tokens, int) or max_output_tokens < 0:
            raise InvalidInput(f"max_output_tokens must be a usize, got {max_output_tokens!r}")
        self.name = name
        self.block_size = bs
        self.max_output_tokens = max_output_tokens
        self.enable_prefix_caching = bool(enable_prefix_caching)
        self._rng = random.Random(f"{seed}:{name}")
        self._uuids = 0
        self.tokens = TokenBlockSequence(tokens, bs, DEFAULT_SALT)
        self.num_input_tokens = self.tokens.total_tokens()
        self.generated_tokens = 0
        self.already_generated_tokens = 0
        self.unique_blocks: list[UniqueBlock] = self._create_unique_blocks()
        self.creation_signal: Use | None = Use(tuple(self.unique_blocks))

    @classmethod
    def new_with_signal(
        cls,
        tokens: Iterable[int],
        max_output_tokens: int,
        block_size: int | None = None,
        enable_prefix_caching: bool = True,
        *,
        name: str = "seq",
        seed: int = 0,
    ) -> tuple[ActiveSequence, Use | None]:
        s = cls(tokens, max_output_tokens, block_size, enable_prefix_caching, name=name, seed=seed)
        return s, s.take_creation_signal()

    # -------------------------------------------------------------- helpers

    def _fresh_partial(self) -> PartialBlock:
        p = PartialBlock(f"{self.name}.u{self._uuids}")
        self._uuids += 1
        return p

    def _random_u64(self) -> int:
        return self._rng.getrandbits(64)

    def _create_unique_blocks(self) -> list[UniqueBlock]:
        out: list[UniqueBlock] = [
            FullBlock(b.sequence_hash if self.enable_prefix_caching else self._random_u64()) for b in self.tokens.blocks
        ]
        if self.tokens.total_tokens() % self.block_size != 0:
            out.append(self._fresh_partial())
        return out

    def _parent_hash(self) -> int | None:
        if len(self.unique_blocks) < 2:
            return None
        b = self.unique_blocks[-2]
        if isinstance(b, FullBlock):
            return b.hash
        raise PartialParent(f"{b.to_json()}")

    # -------------------------------------------------------------- API

    def __len__(self) -> int:
        return self.tokens.total_tokens()

    def take_creation_signal(self) -> Use | None:
        s, self.creation_signal = self.creation_signal, None
        return s

    def push(self, token: int) -> list[MoveBlock] | None:
        """Append a token. On the first token of a new block: promote the previous partial
        (if the last unique block is partial) and ``Use`` a fresh partial."""
        self.tokens.append(token)
        self.generated_tokens += 1
        if len(self) % self.block_size != 1:
            return None
        signals: list[MoveBlock] = []
        last = self.unique_blocks[-1] if self.unique_blocks else None
        if isinstance(last, PartialBlock):
            complete = self.tokens.last_complete_block()
            if complete is None:
                raise UnwrapNone("last_complete_block")
            h = complete.sequence_hash if self.enable_prefix_caching else self._random_u64()
            self.unique_blocks[-1] = FullBlock(h)
            signals.append(Promote(last.uuid, h, self._parent_hash()))
        p = self._fresh_partial()
        self.unique_blocks.append(p)
        signals.append(Use((p,)))
        return signals

    def generate(self) -> list[MoveBlock]:
        """Push one random u32 token; at ``max_output_tokens`` append the free signals."""
        if not self.generated_tokens < self.max_output_tokens:
            raise GenerateLimit(f"generated {self.generated_tokens} of {self.max_output_tokens}")
        signals = self.push(self._rng.getrandbits(32)) or []
        if self.generated_tokens == self.max_output_tokens:
            signals.extend(self.free_signal())
        return signals

    def free_signal(self) -> list[MoveBlock]:
        """One single-block signal per unique block, last first: Destroy partials, Deref full."""
        return [Destroy((b,)) if isinstance(b, PartialBlock) else Deref((b,)) for b in reversed(self.unique_blocks)]

    def reset_with_signal(self) -> list[MoveBlock]:
        """Preemption: free signals of the current blocks, then back to the prompt."""
        free = self.free_signal()
        self.tokens.truncate(self.num_input_tokens)
        self.unique_blocks = self._create_unique_blocks()
        self.already_generated_tokens = max(self.generated_tokens, self.already_generated_tokens)
        self.generated_tokens = 0
        self.creation_signal = Use(tuple(self.unique_blocks))
        return free

    def pop(self) -> None:
        """Remove the last token; at a block boundary drop the last unique block, with no
        signal (§6 #10: the partial stays allocated in the manager)."""
        self.tokens.pop()
        self.generated_tokens = max(0, self.generated_tokens - 1)
        if self.tokens.total_tokens() % self.block_size == 0 and self.unique_blocks:
            self.unique_blocks.pop()
