"""SGLang 0.5.23's real prefix cache (``sglang/srt/mem_cache/``): what it promises, as the system
``kvmodel conform --target sglang-radix-cache`` runs beside the real caches and the one that
target's counterexample traces replay on (``docs/sglang.md``). Like the mocker's scheduler, it
has no model checker of its own."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kvmodel.components.base import Component, ConformTarget
from kvmodel.components.sglang_cache.system import NAME


def _system(config: dict[str, Any] | None, quirks: Iterable[str] | None) -> Any:
    from kvmodel.components.sglang_cache.system import SglangCacheSystem

    return SglangCacheSystem(config, quirks)


def _findings() -> Any:
    from kvmodel.components.sglang_cache import findings

    return findings


def _available() -> str | None:
    from kvmodel.conformance import sglang

    return sglang.available()


def _run(**kw: Any) -> dict[str, Any]:
    from kvmodel.conformance import sglang

    return sglang.run(**kw)


def _describe(out: dict[str, Any]) -> list[str]:
    from kvmodel.conformance import sglang

    return sglang.describe(out)


SGLANG = ConformTarget(
    name="sglang-radix-cache",
    title="SGLang's real prefix caches: their KV events, Dynamo's router (real and modelled)",
    available=_available,
    run=_run,
    describe=_describe,
    in_check=False,
    counterexample_key="schedule",
    paths=("raw", "publisher", "indexer"),
)

COMPONENT = Component(
    name=NAME,
    title="SGLang's prefix cache (RadixCache, UnifiedRadixCache), as far as its events promise",
    real_code="sglang 0.5.23 sglang/srt/mem_cache/radix_cache.py, events.py, unified_radix_cache.py",
    aliases=("sglang_cache",),
    system=_system,
    conform=(SGLANG,),
    findings=_findings,
    router_stream=False,
)
COMPONENTS = (COMPONENT,)
