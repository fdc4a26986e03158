"""The publisher's findings (docs/findings.md, tools/gen_findings.py)."""

from __future__ import annotations

from typing import Any

NAME = "kv_event_publisher"

CONSEQUENCE: dict[str, str] = {
    "removed_passes_every_copy": (
        "An engine that publishes a BlockRemoved per physical copy (vLLM does) makes the router forget a "
        "prefix the worker still serves: requests that would hit it are routed as misses. This is the "
        "raw path's `vllm.per_copy_removed`, on the publisher of before #8012."
    ),
    "cleared_resets_every_rank": (
        "With data parallelism, a Cleared on one rank makes another rank's next per-copy Removed pass "
        "early: the router forgets a hash that rank still holds. The 1.6.1 router also drops events whose "
        "rank differs from the one its publisher advertised, so there one publisher serves one rank."
    ),
}


def binary(q: Any) -> str:
    return "no: the 1.6.1 wheel's publisher has neither (the publisher path passes)"


def section(h: Any) -> list[str]:
    """The publisher's part of docs/findings.md: a Hypothesis counterexample per quirk, 1-minimal."""
    lines = ["# The worker-side KV event publisher (`lib/llm/src/kv_router/publisher/`)", ""]
    real = (
        "- On the real binary: ai-dynamo-runtime 1.6.1's publisher holds a Removed until the last copy goes and "
        "clears one rank (`kvmodel conform --path publisher`, `stateful_tests/test_deployed_paths.py`)."
    )
    lines += list(h.hypothesis_quirks(NAME, {}, lambda q: real, None, lemmas=False))
    return [
        *lines,
        "## On the 1.6.1 wheel's deployed path",
        "",
        "- The relay path's router agrees with the faithful model (6f64a59b6) on every schedule measured through "
        "it (vLLM, SGLang and the mocker, `kvmodel conform --path publisher`; figures in the engines' sections).",
        "- A `KvEventPublisher` advertises one dp rank, and the router drops a batch whose events name another "
        "(logged as a payload that disagrees with its source advertisement); the standalone indexer applies it. "
        "So one publisher serves one rank, and `cleared_resets_every_rank` could only matter between ranks of "
        "one publisher at 9b3e9249f (`stateful_tests/test_deployed_paths.py`).",
        "",
    ]
