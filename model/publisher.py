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

:class:`KvEventPublisher` is the component ``kv_event_publisher`` checks: the filter between the
engine's events and the router, with the event ids the publisher gives what it sends
(``BatchingState::flush`` in ``publisher/event_processor.rs`` at 0d29bd4e6, later
``publisher/batching.rs``): they count from 1 and advance once per event sent, so a Removed the
filter swallows leaves no gap; the engine's own ids are not passed on. At 0d29bd4e6, without a
batching timeout (the default), every input event is flushed as it arrives, so one input event
makes at most one router event; later revisions coalesce adjacent events of one engine batch
(fewer ids, the same content at the router), which is not modelled.

Two older revisions are named: before 9b3e9249f (PR #8012, revision ``9b3e9249f^``) there was no
filter, and every Removed reached the router (quirk ``removed_passes_every_copy``); at 9b3e9249f
the counts were kept per dp rank and a Cleared from any rank dropped every rank's counts (quirk
``cleared_resets_every_rank``; the per-rank clear came with the residency domains, as in
dynamo-llm 1.5.0's ``dedup.rs``).
"""

from __future__ import annotations

from collections.abc import Iterable

from kvmodel.model.errors import InvalidInput
from kvmodel.model.events import Cleared, KvCacheEvent, Removed, Stored, StoredBlock

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


class KvEventPublisher:
    """The worker-side publisher between an engine and the router: each input event passes the
    dedup filter (unless the ``removed_passes_every_copy`` quirk, the code before #8012, is on)
    and what is left is sent with the publisher's next event id (from 1). ``outbox`` holds what
    was sent since its reader last took it (the router's input, in order)."""

    def __init__(self, quirks: Iterable[str] = ()) -> None:
        self.quirks = frozenset(quirks)
        self.filter = DedupFilter()
        self.next_publish_id = 1
        self.outbox: list[KvCacheEvent] = []

    def clone(self) -> KvEventPublisher:
        c = KvEventPublisher(self.quirks)
        c.filter = self.filter.clone()
        c.next_publish_id = self.next_publish_id
        c.outbox = list(self.outbox)
        return c

    def _send(self, data: Stored | Removed | Cleared, dp_rank: int) -> KvCacheEvent:
        if self.next_publish_id >= 2**64:
            raise InvalidInput("the publisher's event id would pass u64::MAX")
        ev = KvCacheEvent(self.next_publish_id, data, dp_rank)
        self.next_publish_id += 1
        self.outbox.append(ev)
        return ev

    def stored(self, dp_rank: int, parent_hash: int | None, blocks: tuple[StoredBlock, ...]) -> KvCacheEvent:
        """A Stored passes whole; each listed hash counts one more copy."""
        data = Stored(parent_hash, blocks)
        if "removed_passes_every_copy" not in self.quirks:  # no filter before #8012: nothing counted
            self.filter.stored(dp_rank, (b.block_hash for b in blocks))
        return self._send(data, dp_rank)

    def removed(self, dp_rank: int, block_hashes: tuple[int, ...]) -> KvCacheEvent | None:
        """A Removed keeps the hashes whose last copy went (and those never counted); nothing is
        sent when none is left."""
        if "removed_passes_every_copy" in self.quirks:
            kept = tuple(block_hashes)
        else:
            kept = self.filter.removed(dp_rank, block_hashes)
        return self._send(Removed(kept), dp_rank) if kept else None

    def cleared(self, dp_rank: int) -> KvCacheEvent:
        """A Cleared drops the rank's counts (every rank's at 9b3e9249f) and passes."""
        if "cleared_resets_every_rank" in self.quirks:
            self.filter.counts.clear()
        else:
            self.filter.cleared(dp_rank)
        return self._send(Cleared(), dp_rank)

    def publish(self, event: KvCacheEvent) -> KvCacheEvent | None:
        """What of the engine's ``event`` reaches the router (``None``: nothing), numbered by the
        publisher (the engine's id is not passed on)."""
        d = event.data
        if isinstance(d, Stored):
            out: KvCacheEvent | None = self.stored(event.dp_rank, d.parent_hash, d.blocks)
        elif isinstance(d, Removed):
            out = self.removed(event.dp_rank, d.block_hashes)
        else:
            out = self.cleared(event.dp_rank)
        self.outbox.clear()
        return out

    def take(self) -> list[KvCacheEvent]:
        """What was sent since the last ``take`` (and empties the outbox)."""
        out, self.outbox = self.outbox, []
        return out
