"""The KV manager's operations for the differential check beyond the explorer's ``process`` moves:
the read-only calls of ``lib/llm/src/mocker/kv_manager.rs`` (seed 000) — ``probe_new_blocks``,
``get_prefill_cost`` and the three counters."""

from __future__ import annotations

import random
from typing import Any

from kvmodel.workloads import ApiOp, const


def _blocks(rnd: random.Random, lo: int = 0) -> list[Any]:
    """A list of block ids: full hashes 0..4 (one past the API world's four) and two partials."""
    pool: list[Any] = [{"F": h} for h in range(5)] + [{"P": "p0"}, {"P": "p1"}]
    return [rnd.choice(pool) for _ in range(rnd.randint(lo, 4))]


def _probe(_s: Any, rnd: random.Random) -> Any:
    return {"blocks": _blocks(rnd)}


def _prefill(s: Any, rnd: random.Random) -> Any:
    ub = _blocks(rnd, 1)
    bs = int(s.config["block_size"])
    # around the overlap's token count: a short input underflows (the usize panic)
    return {"unique_blocks": ub, "num_input_tokens": rnd.randint(0, (len(ub) + 1) * bs)}


def api_ops() -> tuple[ApiOp, ...]:
    return (
        ApiOp("probe_new_blocks", _probe),
        ApiOp("get_prefill_cost", _prefill),
        const("current_capacity"),
        const("num_active_blocks"),
        const("num_inactive_blocks"),
    )
