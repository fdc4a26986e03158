"""SGLang's findings (docs/findings.md, tools/gen_findings.py): no quirks of its own (the model is
of what SGLang's cache promises), the differences found on the real caches, per Dynamo path."""

from __future__ import annotations

from typing import Any

NAME = "sglang_radix_cache"

CONSEQUENCE: dict[str, str] = {}


def binary(q: Any) -> str:
    return "no binary"


def section(h: Any) -> list[str]:
    """This component's part of docs/findings.md: what the real caches showed (docs/sglang.md)."""
    return [
        "# SGLang's prefix cache (sglang 0.5.23, `sglang/srt/mem_cache/`)",
        "",
        "Found on the real caches (`kvmodel conform --target sglang-radix-cache`, `docs/sglang.md`); every",
        "figure below is of 500 generated schedules at page size 4, ai-dynamo-runtime 1.6.1.",
        "",
        *FOUND,
    ]


FOUND = [
    "- **`sglang.namespace_removed`**: the same tokens cached under two `extra_key` namespaces (no LoRA",
    "  name) are one block to Dynamo's router; evicting one copy publishes a BlockRemoved that takes the",
    "  router's block while the other namespace still caches and serves it. Minimal schedule: a two-page",
    "  prompt inserted in the default namespace and under `tenant-a`, then an evict of one page: SGLang",
    "  still matches 2 pages in one namespace, the router reports 0. In both event formats (default:",
    "  identical hashes; `dynamo`: different hashes, but the router's tree is keyed by the tokens and",
    "  `extra_key` is not on the wire). Copies that differ in `cache_salt` do not have it (the salt",
    "  reaches Dynamo as `cache_namespace`); two tenants under one salt do.",
    "  **Per path**, Dynamo 1.6.1, 500 schedules at seed 20261209 (7,882 steps, 3,776 probes; `--path`):",
    "  - default format, **raw** (into `RadixTree`): seen at 92 probes; **indexer** (`python -m",
    "    dynamo.indexer` on the engine's socket): the router behind SGLang at 92 probes; **publisher**",
    "    (the worker's `KvEventPublisher` relaying the socket to `KvRouter`): **0** probes behind, 92",
    "    differing from the raw path. Two tenants publish identical hashes in the default format, and",
    "    the publisher's per-copy filter (since 9b3e9249f, #8012) holds a Removed until the last copy",
    "    goes: the deployed worker path does not have the namespace case in the default format.",
    "  - `dynamo` format: raw 37 probes (7,832 steps); indexer behind at 37. The tenants' hashes",
    "    differ, so the publisher's filter cannot hold the Removed; on the publisher path the run",
    "    stops first (9th schedule) at the next finding, so the case is not measured there.",
    "- **The deployed publisher path cuts a chain restored under new hashes** (observed on the 1.6.1",
    "  wheel; the rule is not located in the Rust, so it is not modelled and fails the run, exit 1):",
    "  once a block's tokens were stored under one engine hash, a later BlockStored chain that stores",
    "  the same tokens under other hashes reaches `KvRouter` cut after the blocks it already knew,",
    "  even after an AllBlocksCleared in between. SGLang's `dynamo` format does exactly this for two",
    "  namespaces: `--event-format dynamo --path publisher` at seed 20261209 fails on the 9th schedule,",
    "  shrunk to a one-page prompt inserted under `tenant-a`, then four copies of that page inserted",
    "  in the default namespace: the router reports 1 block of 4. The standalone indexer, `RadixTree`",
    "  and the router model store the whole chain",
    "  (`stateful_tests/test_deployed_paths.py::test_a_chain_restored_under_new_hashes_is_cut_on_the_publisher_path_only`).",  # noqa: E501
    "- **The Rust TreeCore batches removals per `extra_key`**: it merges consecutive removals into one",
    "  BlockRemoved only for nodes of one `extra_key`; `RadixCache` and the Python TreeCore merge every",
    "  consecutive removal. The same hashes in the same order (`--cache all` names it",
    "  `sglang.rust_core_batches_removals_per_extra_key`; 118 steps in 500 schedules at seed 20261207).",
    "- Otherwise the three caches agree with the model of what the cache promises, the stream",
    "  invariants, the router and `match_prefix` at every step (500 schedules each at seed 20261207: 7,418",
    "  steps, 2,629 blocks stored, 842 removed, 601 evictions, 485 locks; page sizes 1 and 16 at seed",
    "  20261210 likewise).",
    "",
]
