"""The LRU evictor's findings (docs/findings.md, tools/gen_findings.py)."""

from __future__ import annotations

from typing import Any

NAME = "lru_evictor_wallclock"

CONSEQUENCE: dict[str, str] = {
    "equal_timestamp_stale_entry": (
        "With a coarse clock, an object re-inserted within the same clock tick is evicted at its old "
        "position: the LRU evicts a recently used block before an older one. Found by the explorer: the "
        "queue cleanup keeps every entry whose timestamp equals the table's, so re-inserts within one "
        "tick are never cleaned up and the lazy queue grows without bound (a memory leak whenever the "
        "clock repeats)."
    ),
}


def binary(q: Any) -> str:
    return "evictor no longer in the 1.6.1 mocker"


def section(h: Any) -> list[str]:
    """The wall-clock evictor's part of docs/findings.md: a Hypothesis counterexample, 1-minimal."""
    lines = ["# The mocker's LRU evictor (`lib/llm/src/mocker/evictor.rs`, wall-clock version)", ""]
    real = "- On the real binary: the mocker of ai-dynamo-runtime 1.6.1 no longer has this evictor."
    return lines + list(h.hypothesis_quirks(NAME, {"cleanup_threshold": 50}, lambda q: real, None))
