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
    "  **Per path**, Dynamo 1.6.1, 500 schedules at seed 20261209 (default format: 6,942 steps, 3,311",
    "  probes; `--path`):",
    "  - default format, **raw** (into `RadixTree`): seen at 52 probes; **indexer** (`python -m",
    "    dynamo.indexer` on the engine's socket): the router behind SGLang at 52 probes; **publisher**",
    "    (the worker's `KvEventPublisher` relaying the socket to `KvRouter`): **0** probes behind, 52",
    "    differing from the raw path. Two tenants publish identical hashes in the default format, and",
    "    the publisher's per-copy filter (since 9b3e9249f, #8012) holds a Removed until the last copy",
    "    goes: the deployed worker path does not have the namespace case in the default format.",
    "  - `dynamo` format: raw 21 probes (6,892 steps); indexer behind at 21. The tenants' hashes",
    "    differ, so the publisher's filter cannot hold the Removed; on the publisher path the run",
    "    stops first (18th schedule) at the publisher finding below, so the case is not measured there.",
    "- **`sglang.namespace_rehashed`** (the `dynamo` format): a tenant stores tokens another namespace",
    "  of the same router identity holds under other hashes; 1.6.1's tree keeps the first hash a tokens",
    "  node was stored under, so the tenant's blocks stored below its own hash are refused (the router",
    "  under-reports) and removals naming it fail (it over-reports). Minimal schedule: one page in the",
    "  default namespace, the same page under `tenant-a`, then two pages under `tenant-a`: SGLang 2, the",
    "  router 1. 18 probes in 500 schedules at seed 20261207 on the raw path (0 at seed 20261209);",
    "  the real `RadixTree` and the router model agree on it.",
    "- **The deployed router's default indexer cuts a chain restored under new hashes** (observed on",
    "  the 1.6.1 wheel; not modelled, so it fails the run, exit 1): once a block's tokens were stored",
    "  under one engine hash, a later BlockStored chain that stores the same tokens under other hashes",
    "  is cut in `KvRouter` after the blocks it already knew, even after an AllBlocksCleared or a",
    "  BlockRemoved of the first hash in between. It is the router's indexer, not the publisher:",
    "  `KvRouterConfig(router_event_threads=1)` (the single-threaded `RadixTree`) stores the whole",
    "  chain; the default 4 event threads (the concurrent radix tree, `lib/kv-router/src/indexer/",
    "  concurrent_radix_tree.rs`) cut it. The raw path's `RadixTree` and the standalone indexer store",
    "  the whole chain once the first hash is gone. SGLang's `dynamo`",
    "  format does this whenever two namespaces cache the same tokens: `--event-format dynamo --path",
    "  publisher` at seed 20261209 fails on the 18th schedule (shrunk: a flush, a prompt under",
    "  `tenant-a` with a salt, the same under `tenant-a`, another prompt in the default namespace). The",
    "  standalone indexer and the router model store the whole chain",
    "  (`stateful_tests/test_deployed_paths.py::test_a_chain_restored_under_new_hashes_is_cut_on_the_publisher_path_only`).",  # noqa: E501
    "- **The Rust TreeCore batches removals per `extra_key`**: it merges consecutive removals into one",
    "  BlockRemoved only for nodes of one `extra_key`; `RadixCache` and the Python TreeCore merge every",
    "  consecutive removal. The same hashes in the same order (`--cache all` names it",
    "  `sglang.rust_core_batches_removals_per_extra_key`; 92 steps in 500 schedules at seed 20261207).",
    "- Otherwise the three caches agree with the model of what the cache promises, the stream",
    "  invariants, the router and `match_prefix` at every step (500 schedules each at seed 20261207: 7,977",
    "  steps, 2,700 blocks stored, 860 removed, 650 evictions, 607 locks; page sizes 1 and 16 at seed",
    "  20261210 likewise; the LoRA-named tenant's events carry its name and re-keyed hashes).",
    "",
]
