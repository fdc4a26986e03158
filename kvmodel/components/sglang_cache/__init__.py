"""SGLang 0.5.23's real prefix cache (``sglang/srt/mem_cache/``): what it promises, as the system
``kvmodel conform --target sglang-radix-cache`` runs beside the real caches and the one that
target's counterexample traces replay on (``docs/sglang.md``). Like the mocker's scheduler, it
has no model checker of its own."""

from __future__ import annotations

from kvmodel.components.base import Component, ConformTarget

NAME = "sglang_radix_cache"

SGLANG = ConformTarget(
    name="sglang-radix-cache",
    title="SGLang's real prefix caches: their KV events, Dynamo's router (real and modelled)",
    available="kvmodel.conformance.sglang:available",
    run="kvmodel.conformance.sglang:run",
    describe="kvmodel.conformance.sglang:describe",
    in_check=False,
    counterexample_key="schedule",
    paths=("raw", "publisher", "indexer"),
)

COMPONENT = Component(
    name=NAME,
    title="SGLang's prefix cache (RadixCache, UnifiedRadixCache), as far as its events promise",
    real_code="sglang 0.5.23 sglang/srt/mem_cache/radix_cache.py, events.py, unified_radix_cache.py",
    aliases=("sglang_cache",),
    system="kvmodel.components.sglang_cache.system:SglangCacheSystem",
    conform=(SGLANG,),
    findings="kvmodel.components.sglang_cache.findings",
    router_stream=False,
)
COMPONENTS = (COMPONENT,)
