"""The block registry's operations for the differential check beyond the explorer's moves
(dynamo-llm 1.0.2, ``block/state.rs`` and ``block/registry.rs``): block states built token by
token (``new_state``, ``initialize_sequence``, ``add_token(s)``, ``pop_token(s)``, ``commit``,
``apply_token_block``), their accessors (``state_query``), ``create_publish_handle``,
``is_registered`` and a registry created at run time (``new_registry``).

Names follow the API world's slots (``s0``.. states, ``ph0``.. publish handles), so the
explorer's moves act on what these operations create."""

from __future__ import annotations

import random
from typing import Any

from kvmodel.model.registry import BlockState, RegistryWorld
from kvmodel.workloads import ApiOp

STATES, HANDLES, HASHES = 3, 2, 2
TOKENS = (0, 1, 2, 3)


def _model(s: Any) -> RegistryWorld:
    m: RegistryWorld = s.model
    return m


def _states(s: Any) -> list[str]:
    return [n for n, v in sorted(_model(s).values.items()) if isinstance(v, BlockState)]


def _free(s: Any, prefix: str, n: int) -> str | None:
    vals = _model(s).values
    return next((f"{prefix}{i}" for i in range(n) if f"{prefix}{i}" not in vals), None)


def _block(rnd: random.Random) -> dict[str, Any]:
    """A token block as Rust has one: with its tokens (a ``TokenBlock`` always holds them, so a
    Complete state built from it answers ``len`` and ``tokens`` with ``Some(..)``; a block given
    without tokens, as a hand-written trace may, answers ``null`` there: ``docs/contracts.md``)."""
    h = rnd.randrange(HASHES)
    parent = rnd.choice([None, None, *range(HASHES)])
    tokens = [rnd.choice(TOKENS) for _ in range(rnd.randint(1, 4))]
    return {"hash": h, "parent": parent if parent != h else None, "tokens": tokens}


def _on_state(extra: Any = None) -> Any:
    def args(s: Any, rnd: random.Random) -> Any:
        names = _states(s)
        if not names:
            return None
        out = {"state": rnd.choice(names)}
        if extra is not None:
            out.update(extra(s, rnd))
        return out

    return args


def _new_state(s: Any, rnd: random.Random) -> Any:
    name = _free(s, "s", STATES)
    return None if name is None else {"as": name}


def _publish_handle(s: Any, rnd: random.Random) -> Any:
    name = _free(s, "ph", HANDLES)
    if name is None:
        return None
    return {"as": name, "block": _block(rnd), "tier": rnd.choice(["Device", "HostPinned"])}


def _is_registered(s: Any, rnd: random.Random) -> Any:
    m = _model(s)
    hashes = set(range(HASHES))
    for v in m.values.values():
        if isinstance(v, BlockState) and v.block is not None:
            hashes.add(v.block.sequence_hash)
    return {"registry": rnd.choice(sorted(m.pools)), "hash": rnd.choice(sorted(hashes))}


def _new_registry(s: Any, rnd: random.Random) -> Any:
    m = _model(s)
    if "extra" in m.pools:
        return None
    return {"as": "extra", "tier": rnd.choice(["Device", "HostPinned", "Disk"])}


def api_ops() -> tuple[ApiOp, ...]:
    return (
        ApiOp("new_state", _new_state, weight=3),
        ApiOp("apply_token_block", _on_state(lambda _s, r: {"block": _block(r)})),
        ApiOp(
            "initialize_sequence",
            _on_state(lambda _s, r: {"page_size": r.randint(0, 3), "salt": r.randint(0, 2)}),
            weight=3,
        ),
        ApiOp("add_token", _on_state(lambda _s, r: {"token": r.choice(TOKENS)})),
        ApiOp("add_tokens", _on_state(lambda _s, r: {"tokens": [r.choice(TOKENS) for _ in range(r.randint(0, 4))]})),
        ApiOp("pop_token", _on_state()),
        ApiOp("pop_tokens", _on_state(lambda _s, r: {"count": r.randint(0, 3)}), weight=2),
        ApiOp("commit", _on_state(), weight=3),
        ApiOp("state_query", _on_state(lambda _s, r: {"query": r.choice(RegistryWorld.STATE_QUERIES)})),
        ApiOp("create_publish_handle", _publish_handle),
        ApiOp("is_registered", _is_registered, weight=2),
        ApiOp("new_registry", _new_registry),
    )
