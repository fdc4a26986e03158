"""Typed errors: every panic of the real code, and every rejection of the ideal model.

A ``ModelError`` stands for a Rust panic (or an ideal-model precondition). Its ``id`` is
the Rust panic message (or, for rejections that exist only in the ideal model, a message
starting with ``"ideal: "``), so traces and vectors can name the failure without
depending on Python class names.
"""

from __future__ import annotations

from typing import Any, ClassVar


class ModelError(Exception):
    """Base class of every rejection the models raise.

    ``id`` is stable and is what traces record; ``detail`` carries the offending values.
    """

    id: ClassVar[str] = "model error"

    # No ``__init__`` of its own: the built-in constructor keeps the detail as ``args[0]``, and
    # the message is spelled only when read (a search raises and drops thousands of rejections).
    @property
    def detail(self) -> str:
        d: str = self.args[0] if self.args else ""
        return d

    def __str__(self) -> str:
        d = self.detail
        return f"{self.id}: {d}" if d else self.id

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "type": type(self).__name__, "detail": self.detail}


class InvalidInput(ModelError):
    """An argument the real code's types would not admit (wrong kind, negative size, ...)."""

    id = "invalid input"


def require_naturals(obj: object, names: tuple[str, ...]) -> None:
    """Each named attribute of ``obj`` is a non-negative integer (a usize), else ``InvalidInput``."""
    for name in names:
        v = getattr(obj, name)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise InvalidInput(f"{name} must be a non-negative integer, got {v!r}")


# --- old mocker KV manager (lib/llm/src/mocker/kv_manager.rs) -------------------------


class ParentBlockPartial(ModelError):
    """``Use`` whose last hit block is a PartialBlock: ``panic!("parent block cannot be partial")``."""

    id = "parent block cannot be partial"


class UnwrapNone(ModelError):
    """``Option::unwrap()`` on ``None``."""

    id = "called `Option::unwrap()` on a `None` value"


class UnwrapErr(ModelError):
    """``Result::unwrap()`` on ``Err``."""

    id = "called `Result::unwrap()` on an `Err` value"


class DestroyNotActive(UnwrapNone):
    """``Destroy`` of a block absent from ``active_blocks``: ``.remove(hash).unwrap()`` on None."""


class DestroyNotResident(ModelError):
    """``Destroy`` of an active block missing from ``all_blocks``: ``assert!(all_blocks.remove)``."""

    id = "assertion failed: self.all_blocks.remove(hash)"


class PromoteMissing(ModelError):
    """``Promote`` of a partial that is not active: "Missing active block for promotion"."""

    id = "Missing active block for promotion"


class PromoteNotResident(ModelError):
    """``Promote`` of an active partial missing from ``all_blocks``: ``assert!`` fails."""

    id = "assertion failed: self.all_blocks.remove(&uuid_block)"


class NegativeRefcount(ModelError):
    """Deref of an active block whose count is already 0. Unreachable in the real code (a
    present key always has a count of at least 1); kept so the catalogue of panics is whole."""

    id = "Negative reference count would be encountered after Deref."


class PartialNotLast(ModelError):
    """Ideal model only: a Use may hold a PartialBlock only as its last entry."""

    id = "ideal: a partial block may only be the last block of a Use"


class DerefNotHeld(ModelError):
    """Ideal model only: Deref of a block with no outstanding reference (not active)."""

    id = "ideal: Deref of a block that is not active"


class PromoteParentUnknown(ModelError):
    """Ideal model only: Promote naming a parent that is not a resident full block."""

    id = "ideal: Promote parent is not a resident full block"


# --- old ActiveSequence (lib/llm/src/mocker/sequence.rs) ------------------------------


class BlockSizeTooSmall(ModelError):
    """``assert!(block_size > 1, "block_size must be greater than 1")``."""

    id = "block_size must be greater than 1"


class PartialParent(ModelError):
    """``get_parent_hash``: the block before the promoted one is partial."""

    id = "Cannot have a partial block as parent"


class GenerateLimit(ModelError):
    """``generate`` past ``max_output_tokens``."""

    id = "Cannot generate more tokens: reached max_output_tokens limit"


class SubtractOverflow(ModelError):
    """usize subtraction below zero (debug-build panic; release builds wrap)."""

    id = "attempt to subtract with overflow"


# --- native ("vLLM") block pool and KV manager (lib/mocker/src/cache/vllm_block_pool.rs,
# --- lib/mocker/src/kv_manager/vllm_backend.rs) and the G1 facade (g1_manager.rs) ------


class PoolCapacityZero(ModelError):
    """``VllmBlockPool::new(0)``."""

    id = "capacity must be > 0"


class PrefixNotResident(ModelError):
    """``reserve`` with a prefix hash that has no cached copy any more."""

    id = "authorized prefix hash is no longer resident"


class PrefixExceedsLayout(ModelError):
    """More prefix candidates than the reservation's total."""

    id = "prefix candidates exceed layout"


class NoFreshCapacity(ModelError):
    """``allocate_private`` on a reservation whose fresh capacity is used up."""

    id = "reservation has no fresh capacity"


class UnknownCopy(ModelError):
    """A copy id the pool does not hold (released or never allocated)."""

    id = "attempted to release an unknown block copy"


class CacheNonPrivate(ModelError):
    """``cache_private`` of a copy that is already cached."""

    id = "only a private copy can enter the prefix cache"


class RefUnderflow(ModelError):
    """``release`` of a cached copy with no reference."""

    id = "cached-copy reference underflow"


class NativePanic(ModelError):
    """A panic of the native KV manager or the facade; ``detail`` starts with the Rust message.

    The id is the Rust format string with ``{}`` where Rust interpolates runtime data (e.g.
    ``"request {} owns no block table"``), or the whole text of a bare ``assert!`` (``"assertion
    failed: reusable_prefix_blocks <= blocks.len()"``), so traces name the failure without the
    request id; ``detail`` is the message with the data filled in."""

    id = "native panic"

    def __init__(self, message: str, detail: str = "") -> None:
        self.message = message
        setattr(self, "id", message)  # noqa: B010 -- per-instance id: the panic's message
        super().__init__(detail)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.detail))
