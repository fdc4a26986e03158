"""Argument specifications of the systems' operations, checked before anything changes.

Each operation of a system declares its argument keys, which are required, and what each holds.
:func:`check` raises :class:`~kvmodel.model.errors.InvalidInput` — one line naming the
operation, the key and the problem — for a missing key, an unknown key (a misspelled
``salt_hash`` must not silently become salt 0), or a value of the wrong kind or out of range.
What the Rust types would not admit is an ``InvalidInput``; what they admit and the real code
rejects is the model's own panic.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kvmodel.model.errors import InvalidInput

MAX_TOKENS = 4096  # tokens in one request or one call: a bound on what one step may ask for
U32, U64 = 2**32, 2**64


def _int(v: Any, lo: int, hi: int, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v < hi:
        raise InvalidInput(f"{what} must be an integer in [{lo}, {hi}), got {v!r:.60}")
    return v


def owner(v: Any, what: str) -> int:
    return _int(v, 0, 2**63, what)


def u32(v: Any, what: str) -> int:
    return _int(v, 0, U32, what)


def u64(v: Any, what: str) -> int:
    return _int(v, 0, U64, what)


def usize(v: Any, what: str) -> int:
    return _int(v, 0, U64, what)


def tokens(v: Any, what: str) -> list[int]:
    if not isinstance(v, list) or len(v) > MAX_TOKENS:
        raise InvalidInput(f"{what} must be a list of at most {MAX_TOKENS} u32 tokens, got {v!r:.60}")
    return [u32(t, f"{what}[{i}]") for i, t in enumerate(v)]


def boolean(v: Any, what: str) -> bool:
    if not isinstance(v, bool):
        raise InvalidInput(f"{what} must be true or false, got {v!r:.60}")
    return v


def name(v: Any, what: str) -> str:
    if not isinstance(v, str) or not v or len(v) > 200:
        raise InvalidInput(f"{what} must be a non-empty name (a string), got {v!r:.60}")
    return v


def string(v: Any, what: str) -> str:
    if not isinstance(v, str) or len(v) > 200:
        raise InvalidInput(f"{what} must be a string, got {v!r:.60}")
    return v


def anything(v: Any, what: str) -> Any:
    return v


def optional(check: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    def opt(v: Any, what: str) -> Any:
        return None if v is None else check(v, what)

    opt.contract_type = f"{type_name(check)}|null"  # type: ignore[attr-defined]
    return opt


# what the adapter contract (docs/contracts.md) calls each checker's values
_TYPE_NAMES: dict[Callable[..., Any], str] = {
    owner: "u63",
    u32: "u32",
    u64: "u64",
    usize: "usize",
    tokens: f"[u32] (at most {MAX_TOKENS})",
    boolean: "boolean",
    name: "name",
    string: "string",
}


def typed(name: str) -> Callable[[Callable[[Any, str], Any]], Callable[[Any, str], Any]]:
    """Name what a component's own checker admits, for the adapter contract."""

    def mark(check: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
        check.contract_type = name  # type: ignore[attr-defined]
        return check

    return mark


def type_name(check: Callable[[Any, str], Any]) -> str:
    """The contract's name for what ``check`` admits (a component's own checker names it in its
    ``contract_type`` attribute); ``ValueError`` for a checker that says nothing."""
    t = _TYPE_NAMES.get(check) or getattr(check, "contract_type", None)
    if t is None:
        raise ValueError(f"the checker {getattr(check, '__name__', check)!r} has no contract type")
    return str(t)


Spec = Mapping[str, tuple[bool, Callable[[Any, str], Any]]]  # key -> (required, checker)


def check(where: str, args: Any, spec: Spec | None) -> dict[str, Any]:
    """The checked arguments of an operation (``None`` is no arguments); unknown keys are refused.
    ``where`` begins each message (``"<component> <op>"``)."""
    args = {} if args is None else args
    if not isinstance(args, dict):
        raise InvalidInput(f"{where}: arguments must be an object, got {args!r:.60}")
    if spec is None:
        return dict(args)
    for k in args:
        if k not in spec:
            raise InvalidInput(f"{where}: unknown argument {k!r:.40} (known: {sorted(spec) or 'none'})")
    out: dict[str, Any] = {}
    for k, (required, fn) in spec.items():
        if k not in args:
            if required:
                raise InvalidInput(f"{where}: needs {k!r}")
            continue
        out[k] = fn(args[k], f"{where}: {k}")
    return out


REQUIRED, OPTIONAL = True, False
