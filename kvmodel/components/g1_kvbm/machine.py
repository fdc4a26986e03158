"""The G1 KVBM backend's Hypothesis machine: request-level moves of a wider world than the explorer's."""

from __future__ import annotations

from typing import Any, ClassVar

from kvmodel.components.g1_native.machine import G1Machine
from kvmodel.machines import Machine


class KvbmMachine(G1Machine):
    """The G1 facade with the KVBM backend, driven by request-level moves (the explorer's
    :class:`~kvmodel.components.g1_kvbm.space.KvbmSpace`, wider: three requests, all five prompts, two decode
    tokens each, decode reservations of two slots, capacity 3); the same rule as the native one."""

    component = "g1_kvbm"
    config: ClassVar[dict[str, Any]] = {"max_capacity": 3, "plh_fragments": 2}
    quirks = frozenset()

    def __init__(self) -> None:
        from kvmodel.components.g1_kvbm.space import KvbmSpace

        Machine.__init__(self)
        self.space = KvbmSpace(owners=3, prompts=5, pushes=2, decode=2)  # type: ignore[assignment]
        self.moves = self.space.moves()
