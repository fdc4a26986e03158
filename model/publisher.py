"""Dynamo's worker-side KV event publisher: its per-copy deduplication (revision 1.6.1).

Real code: ``lib/llm/src/kv_router/publisher/dedup.rs`` (``EventDedupFilter``, read at commit
6f64a59b6; the filter came with 9b3e9249f, PR #8012, in ``publisher/event_processor.rs``). The
``ai-dynamo-runtime`` 1.6.1 wheel's relay path behaves as this file says
(``kvmodel/conformance/deployed.py``, ``stateful_tests/test_deployed_paths.py``).

An engine may publish a block more than once (vLLM publishes a BlockStored per physical copy
and a BlockRemoved as each copy goes). The filter keeps, per ``(dp_rank, storage tier,
residency domain)``, a count of the Stored events seen for each block hash:

* a Stored always passes and adds one per listed hash (a hash listed twice adds two);
* a Removed keeps, in order, only the hashes whose count falls to zero (the entry is then
  dropped) and the hashes it never counted ("pass through defensively"); a Removed left empty
  is not sent at all;
* a Cleared drops the rank's counts in that domain across every tier, and passes;
* events of the ``CacheOwner`` residency domain bypass the counts (the engines modelled here
  publish in the ``Worker`` domain only, on the device tier).

The standalone indexer (``python -m dynamo.indexer`` subscribed to the engine's socket) has no
such filter: there every Removed reaches the tree.
"""

from __future__ import annotations

from collections.abc import Iterable

from kvmodel.model.events import Cleared, KvCacheEvent, Removed, Stored

Scope = tuple[int, str, str]  # (dp_rank, storage tier, residency domain)
DEVICE, WORKER, CACHE_OWNER = "device", "worker", "cache_owner"


class DedupFilter:
    """``EventDedupFilter``: Stored counts per scope and hash; a Removed passes at zero."""

    def __init__(self) -> None:
        self.counts: dict[Scope, dict[int, int]] = {}

    def clone(self) -> DedupFilter:
        c = DedupFilter()
        c.counts = {k: dict(v) for k, v in self.counts.items()}
        return c

    def stored(self, dp_rank: int, hashes: Iterable[int], tier: str = DEVICE, domain: str = WORKER) -> None:
        """``track_store_in_domain``: one more copy of each listed hash."""
        if domain == CACHE_OWNER:
            return
        counts = self.counts.setdefault((dp_rank, tier, domain), {})
        for h in hashes:
            counts[h] = counts.get(h, 0) + 1

    def removed(self, dp_rank: int, hashes: Iterable[int], tier: str = DEVICE, domain: str = WORKER) -> tuple[int, ...]:
        """``filter_remove_in_domain``: the hashes that pass, in order (empty: nothing is sent)."""
        if domain == CACHE_OWNER:
            return tuple(hashes)
        counts = self.counts.setdefault((dp_rank, tier, domain), {})
        out: list[int] = []
        for h in hashes:
            n = counts.get(h)
            if n is None:
                out.append(h)  # never counted: passes
            elif n == 1:
                del counts[h]
                out.append(h)  # the last copy went
            else:
                counts[h] = n - 1
        return tuple(out)

    def cleared(self, dp_rank: int, domain: str = WORKER) -> None:
        """``clear_rank_domain``: the rank's counts in the domain, every tier, dropped."""
        if domain == CACHE_OWNER:
            return
        self.counts = {k: v for k, v in self.counts.items() if not (k[0] == dp_rank and k[2] == domain)}

    def publish(self, event: KvCacheEvent) -> KvCacheEvent | None:
        """What of ``event`` reaches the router (``None``: nothing)."""
        d = event.data
        if isinstance(d, Stored):
            self.stored(event.dp_rank, (b.block_hash for b in d.blocks))
            return event
        if isinstance(d, Removed):
            kept = self.removed(event.dp_rank, d.block_hashes)
            return KvCacheEvent(event.event_id, Removed(kept), event.dp_rank) if kept else None
        assert isinstance(d, Cleared)
        self.cleared(event.dp_rank)
        return event
