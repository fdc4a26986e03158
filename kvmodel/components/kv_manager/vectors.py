"""Harnesses of the single-file era: the LRU evictors, the old KV manager and its
``ActiveSequence``, and the tokens crate's ``TokenBlockSequence``.

Observations use the Rust names: ``free_table`` / ``len`` / ``order`` for an evictor
(``order`` is the eviction order, oldest first); ``active_blocks`` (alias ``active``: id →
refcount, ids as strings, partials ``P:<uuid>``), ``inactive_blocks`` (alias ``inactive``,
oldest first), ``inactive_count``, ``all_blocks``, ``current_capacity``, ``num_active_blocks``,
``num_inactive_blocks``, ``max_capacity``, ``block_size`` for the manager, whose ``events`` are
its ``MoveBlockResponse`` values (``{"Store": {"blocks", "parent_hash"}}``,
``{"Remove": {"blocks"}}``).
"""

from __future__ import annotations

from typing import Any

import attrs

from kvmodel.model.blocks import FullBlock, MoveBlock, UniqueBlock, blocks_from_json, move_block_from_json
from kvmodel.model.hashing import TokenBlockSequence
from kvmodel.model.kv_manager import KvManager
from kvmodel.model.sequence import ActiveSequence
from kvmodel.vectors.harness import Harness
from kvmodel.vectors.notation import Uninterpretable, int_of, tokens


def _block_key(b: UniqueBlock) -> str:
    return str(b.hash) if isinstance(b, FullBlock) else f"P:{b.uuid}"


def _block_id(b: UniqueBlock) -> Any:
    return b.hash if isinstance(b, FullBlock) else b.uuid


class OldKvManagerHarness(Harness):
    """``lib/llm/src/mocker/kv_manager.rs`` (commit f0652d89f)."""

    component = "old_kv_manager"
    model_component = "kv_manager"

    def __init__(self, vector: dict[str, Any], quirks: frozenset[str]) -> None:
        super().__init__(vector, quirks)
        c = self.constructor
        self.m = KvManager(
            c.get("max_capacity", 0),
            c.get("block_size", 16),
            channel=bool(c.get("response_channel", c.get("channel", True))),
            quirks=quirks,
        )

    def block_size(self) -> int | None:
        return self.m.block_size

    def observe(self) -> dict[str, Any]:
        m = self.m
        active = {_block_key(b): rc for b, rc in m.active.items()}
        order = [_block_id(b) for b in m.inactive.order()]
        return {
            "active_blocks": active,
            "active": active,
            "inactive_blocks": order,
            "inactive": order,
            "inactive_count": len(m.inactive),
            "inactive_lru_order_oldest_first": order,
            "all_blocks": sorted((_block_key(b) for b in m.all_blocks), key=str),
            "current_capacity": m.current_capacity(),
            "num_active_blocks": m.num_active_blocks(),
            "num_inactive_blocks": m.num_inactive_blocks(),
            "max_capacity": m.max_capacity,
            "block_size": m.block_size,
        }

    def drain(self) -> list[Any]:
        return [e.to_json() for e in self.m.drain_events()]

    def op_process(self, a: dict[str, Any]) -> bool:
        sig: MoveBlock = move_block_from_json(a)
        return self.m.process(sig)

    def op_probe_new_blocks(self, a: dict[str, Any]) -> int:
        return self.m.probe_new_blocks(blocks_from_json(a.get("blocks")))

    def op_get_prefill_cost(self, a: dict[str, Any]) -> dict[str, Any]:
        n = int_of(a.get("num_input_tokens"))
        if n is None:
            raise Uninterpretable("get_prefill_cost needs an integer num_input_tokens")
        nb, nt = self.m.get_prefill_cost(blocks_from_json(a.get("unique_blocks")), n)
        return {"returns": {"new_blocks": nb, "new_tokens": nt}, "new_blocks": nb, "new_tokens": nt}

    def op_current_capacity(self, a: dict[str, Any]) -> int:
        return self.m.current_capacity()

    def op_num_active_blocks(self, a: dict[str, Any]) -> int:
        return self.m.num_active_blocks()

    def op_num_inactive_blocks(self, a: dict[str, Any]) -> int:
        return self.m.num_inactive_blocks()

    def op_current_capacity_perc(self, a: dict[str, Any]) -> float:
        return self.m.current_capacity_perc()

    def op_get_active_perc(self, a: dict[str, Any]) -> float:
        return self.m.get_active_perc()

    def op_get_active_blocks(self, a: dict[str, Any]) -> list[Any]:
        return sorted((_block_key(b) for b in self.m.get_active_blocks()), key=str)

    def op_get_inactive_blocks(self, a: dict[str, Any]) -> list[Any]:
        return sorted((_block_key(b) for b in self.m.get_inactive_blocks()), key=str)


def _seq_view(s: ActiveSequence) -> dict[str, Any]:
    return {
        "len": len(s),
        "num_input_tokens": s.num_input_tokens,
        "generated_tokens": s.generated_tokens,
        "already_generated_tokens": s.already_generated_tokens,
        "max_output_tokens": s.max_output_tokens,
        "unique_blocks": [b.to_json() for b in s.unique_blocks],
        "block_size": s.block_size,
        "tokens": s.tokens.tokens,
    }


def _sigs(x: list[MoveBlock] | None) -> list[dict[str, Any]] | None:
    return None if x is None else [s.to_json() for s in x]


class OldActiveSequenceHarness(Harness):
    """``lib/llm/src/mocker/sequence.rs`` (commit f0652d89f). Sequences are named (``seq`` by
    default); the last one operated on is also observable at the top level."""

    component = "old_active_sequence"
    model_component = "kv_manager"

    def __init__(self, vector: dict[str, Any], quirks: frozenset[str]) -> None:
        super().__init__(vector, quirks)
        self.seqs: dict[str, ActiveSequence] = {}
        self.last = "seq"

    def block_size(self) -> int | None:
        s = self.seqs.get(self.last)
        return None if s is None else s.block_size

    def observe(self) -> dict[str, Any]:
        out: dict[str, Any] = {n: _seq_view(s) for n, s in self.seqs.items()}
        if self.last in self.seqs:
            out.update(_seq_view(self.seqs[self.last]))
        return out

    def _seq(self, a: dict[str, Any]) -> ActiveSequence:
        name = str(a.get("seq", self.last))
        if name not in self.seqs:
            raise Uninterpretable(f"no sequence named {name!r}")
        self.last = name
        return self.seqs[name]

    def op_new_with_signal(self, a: dict[str, Any]) -> dict[str, Any]:
        spec = {**self.constructor, **a}
        name = str(spec.get("name", "seq"))
        s, sig = ActiveSequence.new_with_signal(
            tokens(spec["tokens"]),
            int(spec["max_output_tokens"]),
            spec.get("block_size"),
            bool(spec.get("enable_prefix_caching", True)),
            name=name,
        )
        self.seqs[name] = s
        self.last = name
        j = sig.to_json() if sig else None
        return {"signal": j, "returns": j}

    op_new = op_new_with_signal

    def op_push(self, a: dict[str, Any]) -> dict[str, Any]:
        out = _sigs(self._seq(a).push(int(a["token"])))
        return {"returns": out, "signal": out, "signals": out, "num_signals": len(out or [])}

    def op_pop(self, a: dict[str, Any]) -> None:
        self._seq(a).pop()

    def op_generate(self, a: dict[str, Any]) -> dict[str, Any]:
        out = _sigs(self._seq(a).generate())
        return {"returns": out, "signal": out, "signals": out, "num_signals": len(out or [])}

    def op_free_signal(self, a: dict[str, Any]) -> dict[str, Any]:
        out = _sigs(self._seq(a).free_signal())
        return {"returns": out, "free_signals": out, "free_signals_nonempty": bool(out)}

    def op_reset_with_signal(self, a: dict[str, Any]) -> dict[str, Any]:
        s = self._seq(a)
        out = _sigs(s.reset_with_signal())
        return {"returns": out, "free_signals": out, "free_signals_nonempty": bool(out), "after_reset": _seq_view(s)}

    def op_take_creation_signal(self, a: dict[str, Any]) -> dict[str, Any]:
        sig = self._seq(a).take_creation_signal()
        j = None if sig is None else sig.to_json()
        return {"returns": j, "signal": j}

    def op_push_each(self, a: dict[str, Any]) -> None:
        names = a.get("seqs")
        if not isinstance(names, list):
            raise Uninterpretable("push_each needs 'seqs', a list of sequence names")
        for t in tokens(a["tokens"]):
            for sn in names:
                if sn not in self.seqs:
                    raise Uninterpretable(f"no sequence named {sn!r}")
                self.seqs[sn].push(t)


class TokenBlockSequenceHarness(Harness):
    """``TokenBlockSequence::new(tokens, block_size, salt)`` of the tokens crate (§3.1)."""

    component = "token_block_sequence"
    model_component = "kvbm_block_registry"

    def __init__(self, vector: dict[str, Any], quirks: frozenset[str]) -> None:
        super().__init__(vector, quirks)
        self.seq: TokenBlockSequence | None = None

    def observe(self) -> dict[str, Any]:
        if self.seq is None:
            return {}
        return {
            "blocks": [attrs.asdict(b) | {"tokens": list(b.tokens)} for b in self.seq.blocks],
            "current_block": {"tokens": self.seq.current_block, "len": len(self.seq.current_block)},
            "total_tokens": self.seq.total_tokens(),
        }

    def op_new(self, a: dict[str, Any]) -> None:
        spec = {**self.constructor, **a}
        salt = spec.get("salt_hash", spec.get("salt"))
        bs = int_of(spec.get("block_size"))
        if bs is None:
            raise Uninterpretable("TokenBlockSequence::new needs a block_size")
        self.seq = TokenBlockSequence(tokens(spec["tokens"]), bs, salt)

    op_TokenBlockSequence_new = op_new


HARNESSES = (OldKvManagerHarness, OldActiveSequenceHarness, TokenBlockSequenceHarness)
