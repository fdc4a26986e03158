"""The mocker's vLLM scheduler (aisimulate ``crates/core/src/engine/scheduler/vllm/core.rs``,
linked by ``ai-dynamo-runtime==1.6.1``) over the native pool (``lib/mocker/src/cache/
vllm_block_pool.rs``), stepped one engine step at a time. It has no model checker of its own: it
is the system ``kvmodel conform --target vllm-engine`` compares with vLLM's real engine action
for action, and the one that engine's counterexample traces replay on (``docs/g1.md``,
"Conformance C")."""

from __future__ import annotations

from kvmodel.components.base import Component

NAME = "mocker_vllm_scheduler"

COMPONENT = Component(
    name=NAME,
    title="the mocker's vLLM scheduler, stepped per engine step",
    real_code="aisimulate crates/core/src/engine/scheduler/vllm/core.rs over lib/mocker/src/cache/vllm_block_pool.rs",
    aliases=("vllm_scheduler",),
    system="kvmodel.components.mocker_scheduler.system:SchedulerSystem",
)
COMPONENTS = (COMPONENT,)
