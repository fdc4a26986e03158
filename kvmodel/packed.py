"""Packed rule arguments: a Hypothesis rule draws one bounded integer and reads its fields as
the digits of a mixed-radix number.

Why: Hypothesis pays per choice, not per value — every choice opens a span, walks the choice
tree and feeds the mutator's span bookkeeping. On this project's machine each further integer a
rule draws costs about 32–36 µs, and a list a boolean and a span per element (``choice_cost`` in
``benchmarks/hypothesis_throughput.py``; ``docs/performance.md``, "Hypothesis, the KV manager
machine"). A rule whose whole argument is one
integer makes one choice however many fields it has.

The layout is declared once (:class:`Layout`), and both the strategy and the reader come from
it, so the two cannot disagree. Fields are read least-significant first, in declaration order.
Hypothesis draws integers with a heavy bias towards small values and shrinks towards 0, so
declare the fields that shape the step (how many blocks, whether a partial block follows)
first — they vary on every draw — and the details after them; a zero digit must be the simple
choice (no block, the first name, no parent). A list field occupies all of its slots whatever
its length, so the fields after it keep their place when it shrinks.

A layout wider than 2**24 values is split into several integers (drawn as a tuple), each at
most 2**24 wide: beyond that Hypothesis's integer distribution leaves the high digits at zero
almost always.
"""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import strategies as st

#: The widest single integer a layout draws (see the module docstring).
CHUNK = 1 << 24


@attrs.frozen
class Field:
    """``slots`` digits of radix ``radix`` (``slots == 1`` is a scalar)."""

    name: str
    radix: int
    slots: int = 1

    def __attrs_post_init__(self) -> None:
        if self.radix < 1 or self.slots < 1:
            raise ValueError(f"packed field {self.name!r}: radix and slots must be positive")
        if self.radix > CHUNK:
            raise ValueError(f"packed field {self.name!r}: radix {self.radix} exceeds {CHUNK}")


class Layout:
    """The fields of one rule's argument, their strategy and their reader.

    ``Layout(("n", 6), ("tail", 5), ("blocks", 12, 5))``: ``n`` in 0..5, ``tail`` in 0..4 and
    five block codes in 0..11. ``read(code)`` returns ``{"n": int, "tail": int, "blocks":
    [int, ...]}`` (a list for every field declared with a slot count, even of 1)."""

    def __init__(self, *fields: tuple[str, int] | tuple[str, int, int]) -> None:
        self.fields = tuple(Field(*f) for f in fields)
        self.is_list = {f[0]: len(f) == 3 for f in fields}
        if len(self.is_list) != len(self.fields):
            raise ValueError("packed layout: duplicate field names")
        # chunks: consecutive digits whose product stays within CHUNK
        self.chunks: list[list[tuple[str, int]]] = [[]]
        width = 1
        for f in self.fields:
            for _ in range(f.slots):
                if width * f.radix > CHUNK:
                    self.chunks.append([])
                    width = 1
                self.chunks[-1].append((f.name, f.radix))
                width *= f.radix
        widths = []
        for chunk in self.chunks:
            w = 1
            for _, r in chunk:
                w *= r
            widths.append(w)
        self.widths = tuple(widths)
        parts = [st.integers(0, w - 1) for w in self.widths]
        self.strategy: st.SearchStrategy[Any] = parts[0] if len(parts) == 1 else st.tuples(*parts)

    def read(self, code: Any) -> dict[str, Any]:
        """The fields of one drawn value (an ``int``, or a tuple of them for a wide layout)."""
        codes = (code,) if len(self.widths) == 1 else tuple(code)
        out: dict[str, Any] = {f.name: [] for f in self.fields}
        for chunk, c in zip(self.chunks, codes, strict=True):
            for name, radix in chunk:
                out[name].append(c % radix)
                c //= radix
        for name, many in self.is_list.items():
            if not many:
                out[name] = out[name][0]
        return out
