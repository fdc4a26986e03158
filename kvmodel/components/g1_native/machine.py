"""The G1 native backend's Hypothesis machine: request-level moves of a wider world than the explorer's."""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import (
    rule,
)

from kvmodel.machines import Machine


class G1Machine(Machine):
    """The G1 facade with the native backend, driven by request-level moves (the explorer's
    :class:`~kvmodel.components.g1_native.space.G1Space`, wider: three requests, three prompts, three decode
    tokens each, decode reservations of two slots). One rule picks an enabled move."""

    component = "g1_native"
    config: ClassVar[dict[str, Any]] = {"max_capacity": 3}
    quirks = frozenset()

    def __init__(self) -> None:
        from kvmodel.components.g1_native.space import G1Space

        super().__init__()
        self.space = G1Space(owners=3, prompts=3, pushes=3, decode=2)
        self.moves = self.space.moves()

    @rule(pick=st.integers(0, 10_000))
    def move(self, pick: int) -> None:
        enabled = [m for m in self.moves if self.space.allows(self.system, m)]
        if not enabled:
            return
        op, _, args = self.space.concrete(self.system, enabled[pick % len(enabled)])
        self._run_json(op, args)
