"""The KV manager's operations as typed actions (:mod:`kvmodel.actions`).

Seed 000 (``lib/llm/src/mocker/kv_manager.rs``, the old mocker ``KvManager``): ``process``
takes one ``MoveBlock`` signal (``Use``, ``Deref``, ``Destroy``, ``Promote``; its JSON is the
signal's own, ``{"Use": [...]}``), and the queries ``probe_new_blocks``, ``current_capacity``,
``num_active_blocks``, ``num_inactive_blocks`` and ``get_prefill_cost`` (returned as
``{"new_blocks", "new_tokens"}``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from kvmodel import argspec as A
from kvmodel.actions import Action, Actions
from kvmodel.argspec import REQUIRED as R
from kvmodel.model.blocks import MoveBlock, UniqueBlock, blocks_from_json, move_block_from_json

NAME = "kv_manager"


@attrs.frozen
class Process(Action):
    """``process(signal) -> bool``: one ``MoveBlock`` signal (what the invariants see as the
    step's arguments)."""

    op = "process"
    RETURNS = "boolean"
    MEANS = "`true`; `false` when a Use runs out of space (the pool is left as it was)"
    TYPES: ClassVar[dict[str, str]] = {
        "Use | Deref | Destroy": "list of {F: u64} | {P: name}",
        "Promote": "{uuid: name, hash: u64, parent_hash?: u64|null}",
    }
    signal: MoveBlock

    @classmethod
    def from_json(cls, where: str, args: Any) -> Action:
        return cls(move_block_from_json(args))

    def to_json(self) -> dict[str, Any]:
        return self.signal.to_json()

    def run(self, model: Any) -> Any:
        return model.process(self.signal)


@attrs.frozen
class ProbeNewBlocks(Action):
    """``probe_new_blocks(blocks) -> usize``: how many of the blocks are not resident."""

    op = "probe_new_blocks"
    RETURNS = "usize"
    MEANS = "how many of the listed blocks are not resident (integer)"
    TYPES: ClassVar[dict[str, str]] = {"blocks": "list of {F: u64} | {P: name}"}
    ARGS: ClassVar[A.Spec] = {"blocks": (R, A.anything)}
    blocks: tuple[UniqueBlock, ...]

    @classmethod
    def from_json(cls, where: str, args: Any) -> Action:
        a = A.check(where, args, cls.ARGS)
        return cls(blocks_from_json(a["blocks"]))

    def to_json(self) -> dict[str, Any]:
        return {"blocks": [b.to_json() for b in self.blocks]}

    def run(self, model: Any) -> Any:
        return model.probe_new_blocks(self.blocks)


@attrs.frozen
class CurrentCapacity(Action):
    op = "current_capacity"
    RETURNS = "usize"
    MEANS = "resident blocks, active and inactive (integer)"

    def run(self, model: Any) -> Any:
        return model.current_capacity()


@attrs.frozen
class NumActiveBlocks(Action):
    op = "num_active_blocks"
    RETURNS = "usize"
    MEANS = "blocks with a reference (integer)"

    def run(self, model: Any) -> Any:
        return model.num_active_blocks()


@attrs.frozen
class NumInactiveBlocks(Action):
    op = "num_inactive_blocks"
    RETURNS = "usize"
    MEANS = "cached blocks without a reference (integer)"

    def run(self, model: Any) -> Any:
        return model.num_inactive_blocks()


@attrs.frozen
class GetPrefillCost(Action):
    """``get_prefill_cost(unique_blocks, num_input_tokens) -> PrefillCost``."""

    op = "get_prefill_cost"
    RETURNS = "{new_blocks: usize, new_tokens: usize}"
    MEANS = "`{new_blocks, new_tokens}`: blocks not resident, tokens less `block_size` per resident block"
    TYPES: ClassVar[dict[str, str]] = {"unique_blocks": "list of {F: u64} | {P: name}"}
    ARGS: ClassVar[A.Spec] = {"unique_blocks": (R, A.anything), "num_input_tokens": (R, A.usize)}
    unique_blocks: tuple[UniqueBlock, ...]
    num_input_tokens: int

    @classmethod
    def from_json(cls, where: str, args: Any) -> Action:
        a = A.check(where, args, cls.ARGS)
        return cls(blocks_from_json(a["unique_blocks"]), a["num_input_tokens"])

    def to_json(self) -> dict[str, Any]:
        return {"unique_blocks": [b.to_json() for b in self.unique_blocks], "num_input_tokens": self.num_input_tokens}

    def run(self, model: Any) -> dict[str, int]:
        nb, nt = model.get_prefill_cost(self.unique_blocks, self.num_input_tokens)
        return {"new_blocks": nb, "new_tokens": nt}


ACTIONS = Actions(NAME, (Process, ProbeNewBlocks, CurrentCapacity, NumActiveBlocks, NumInactiveBlocks, GetPrefillCost))
