"""``G1Manager``: the facade over one backend, chosen at construction (§2.3).

Real code: ``lib/mocker/src/kv_manager/g1_manager.rs`` revision R05 (finalize, then promote
the computed tail); commit 366ff0ef promoted the tail first (quirk
``promote_tail_before_finalize``, §6 #18: the tail's Stored names a parent that has not
been published yet). The default backend is KVBM (``new_with_event_sink`` →
:class:`~kvmodel.model.g1.kvbm.KvbmKvManager` with the Lineage eviction backend); the native one
is chosen with ``backend="native"``. Quirks are the union of both components' names; each
backend reads its own.

Results are the real ``G1Acquire`` values (``kvmodel.model.g1.acquire``: ``Ready(n)`` and
``CapacityExhausted``, whose text is what traces record); reservations are returned as objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kvmodel.model.blocks import FullBlock, UniqueBlock
from kvmodel.model.errors import InvalidInput, NativePanic
from kvmodel.model.g1.acquire import CAPACITY_EXHAUSTED, G1Acquire, Ready
from kvmodel.model.g1.kvbm import KvbmDecodeReservation, KvbmDestination, KvbmKvManager
from kvmodel.model.g1.native import (
    DecodeReservation,
    DestinationReservation,
    Layout,
    NativeKvManager,
    Published,
)
from kvmodel.model.g1.sequence import G1Deref, G1Promote, G1Signal, G1Use, NewActiveSequence


def validate_plh_alignment(blocks: Sequence[UniqueBlock], plh_count: int) -> None:
    """``validate_plh_alignment`` (g1_manager.rs R05): a Use's PLHs are one per full block,
    else ``assert_eq!`` panics "PLHs must align with full blocks". Called where Rust calls it:
    the native backend's ``process_for_request`` Use, its decode-path Use and its destination
    reservation's layout."""
    full_blocks = sum(1 for b in blocks if isinstance(b, FullBlock))
    if plh_count != full_blocks:
        raise NativePanic("PLHs must align with full blocks", f"left: {plh_count}, right: {full_blocks}")


def layout_of(sig: G1Use) -> Layout:
    return Layout(
        list(sig.blocks),
        list(sig.local_hashes),
        None if sig.token_ids is None else [list(t) for t in sig.token_ids],
        sig.parent,
    )


class G1Manager:
    """``G1Manager``: KVBM by default (``new_with_event_sink`` / ``new_with_eviction_backend``),
    or the native backend (``new_with_backend_and_caching(..., Native, caching)``)."""

    def __init__(
        self,
        max_capacity: int,
        block_size: int,
        *,
        backend: str = "kvbm",
        enable_prefix_caching: bool = True,
        eviction_backend: str = "Lineage",
        publishers: bool = True,
        dp_rank: int = 0,
        quirks: Iterable[str] | None = None,
    ) -> None:
        from kvmodel.model.quirks import resolve

        if backend not in ("kvbm", "native"):
            raise InvalidInput(f"unknown G1 backend {backend!r} (known: ['kvbm', 'native'])")
        self.quirks = resolve("g1_kvbm" if backend == "kvbm" else "g1_native", quirks)
        self.backend = backend
        self.kvbm: KvbmKvManager | None = None
        self._native: NativeKvManager | None = None
        if backend == "kvbm":
            self.kvbm = KvbmKvManager(
                max_capacity,
                block_size,
                eviction_backend=eviction_backend,
                publishers=publishers,
                dp_rank=dp_rank,
                quirks=self.quirks,
            )
        else:
            self._native = NativeKvManager(
                max_capacity,
                block_size,
                enable_prefix_caching=enable_prefix_caching,
                publishers=publishers,
                dp_rank=dp_rank,
                quirks=self.quirks,
            )

    @property
    def native(self) -> NativeKvManager:
        if self._native is None:
            raise NativePanic("not the native G1 backend")
        return self._native

    def _kv(self) -> KvbmKvManager | None:
        return self.kvbm

    def clone(self) -> G1Manager:
        c = G1Manager.__new__(G1Manager)
        c.quirks, c.backend = self.quirks, self.backend
        c.kvbm = None if self.kvbm is None else self.kvbm.clone()
        c._native = None if self._native is None else self._native.clone()
        return c

    def key(self) -> tuple[Any, ...]:
        """The observable state, canonical: copy ids renamed by age, event ids left out."""
        if self.kvbm is not None:
            return tuple(self.kvbm.key())
        m = self.native
        p = m.pool
        rank = {i: k for k, i in enumerate(sorted(p.copies))}
        return (
            tuple((rank[i], c.hash, c.refs, c.pins) for i, c in sorted(p.copies.items())),
            tuple(sorted((h, tuple(rank[i] for i in ids)) for h, ids in p.by_hash.items())),
            tuple(rank[i] for i in p.inactive),
            p.reserved,
            tuple(
                (o, tuple((rank[e.copy], e.hash, e.uuid, repr(e.pending)) for e in t))
                for o, t in sorted(m.tables.items())
            ),
            tuple(sorted(m.partial_uuids)),
        )

    def snapshot(self) -> dict[str, Any]:
        return self.kvbm.snapshot() if self.kvbm is not None else self.native.snapshot()

    @property
    def block_size(self) -> int:
        return self.kvbm.block_size if self.kvbm is not None else self.native.block_size

    def drain_events(self) -> list[Published]:
        return self.kvbm.drain_events() if self.kvbm is not None else self.native.drain_events()

    # -- signals
    def process_for_request(self, owner: int, sig: G1Signal, reusable_prefix_blocks: int = 0) -> G1Acquire:
        """Native: a Use's PLHs must align with its full blocks; Deref and Promote take no
        reusable prefix and always return ``Ready(1)`` (§6 #25 for KVBM: the same shape). KVBM
        ignores the owner and the reusable prefix."""
        if self.kvbm is not None:
            return self.kvbm.process(sig)
        m = self.native
        if isinstance(sig, G1Use):
            validate_plh_alignment(sig.blocks, len(sig.plhs))
            return m.use_for_request(owner, layout_of(sig), reusable_prefix_blocks)
        if reusable_prefix_blocks != 0:
            raise NativePanic("assertion `left == right` failed", f"left: {reusable_prefix_blocks}, right: 0")
        if isinstance(sig, G1Deref):
            m.deref_for_request(owner, sig.blocks)
        elif isinstance(sig, G1Promote):
            m.promote_for_request(owner, sig.uuid, sig.seq_hash, sig.parent_hash, sig.local_hash, _toks(sig.token_ids))
        else:
            raise InvalidInput(f"not a G1 MoveBlock: {sig!r}")
        return Ready(1)

    def process(self, sig: G1Signal) -> G1Acquire:
        if self.kvbm is not None:
            return self.kvbm.process(sig)
        raise NativePanic("native G1 operations require a request owner")

    def finalize_computed_prefix(self, owner: int, before: int, after: int, sequence: NewActiveSequence) -> None:
        """Cache and publish the blocks this decision computed, then promote the computed tail
        (R05). With ``promote_tail_before_finalize`` (commit 366ff0ef) the other way round.
        KVBM: a no-op (its lifecycle is eager)."""
        if self.kvbm is not None:
            return
        if "promote_tail_before_finalize" in self.quirks:
            self._promote_tail(owner, after, sequence)
            self.native.finalize_computed_prefix(owner, before, after)
            return
        self.native.finalize_computed_prefix(owner, before, after)
        self._promote_tail(owner, after, sequence)

    def _promote_tail(self, owner: int, after: int, sequence: NewActiveSequence) -> None:
        p = sequence.promote_computed_tail(after)
        if p is not None and not isinstance(self.process_for_request(owner, p, 0), Ready):
            raise NativePanic("computed-tail promotion must be infallible")

    # -- decode reservations
    def reserve_decode_blocks(self, count: int) -> DecodeReservation | KvbmDecodeReservation | G1Acquire:
        r: DecodeReservation | KvbmDecodeReservation | None
        if self.kvbm is not None:
            r = self.kvbm.reserve_decode_blocks(count)
        else:
            r = self.native.reserve_decode_blocks(count)
        return CAPACITY_EXHAUSTED if r is None else r

    def process_decode_signal_for_request(self, owner: int, sig: G1Signal, res: Any) -> G1Acquire:
        if self.kvbm is not None:
            if not isinstance(res, KvbmDecodeReservation):
                raise NativePanic("decode reservation belongs to a different G1 backend")
            if isinstance(sig, G1Use):
                out = self.kvbm.process_use(sig, res)
                if not isinstance(out, Ready):
                    raise NativePanic("reserved decode allocation must be infallible")
                if self.kvbm.q("use_ready_counts_entries") and out.n != len(sig.blocks):
                    # kvbm_backend.rs process_decode_signal: assert_eq!(allocated, blocks.len(), ...)
                    raise NativePanic("reserved decode allocation must commit every block", out)
                return out
            out = self.kvbm.process(sig)
            if not isinstance(out, Ready):
                raise NativePanic("non-Use decode signal must be infallible")
            return out
        if not isinstance(res, DecodeReservation):
            raise NativePanic("decode reservation belongs to a different G1 backend")
        if isinstance(sig, G1Use):
            validate_plh_alignment(sig.blocks, len(sig.plhs))
            out = self.native.use_decode_reservation(owner, layout_of(sig), res)
            if not isinstance(out, Ready) or out.n != len(sig.blocks):
                raise NativePanic("reserved decode allocation must be infallible")
            return out
        return self.process_for_request(owner, sig, 0)

    def release_decode_reservation(self, res: Any) -> None:
        if self.kvbm is not None:
            if not isinstance(res, KvbmDecodeReservation):
                raise NativePanic("decode reservation belongs to a different G1 backend")
            self.kvbm.release_decode_reservation(res)
            return
        if not isinstance(res, DecodeReservation):
            raise NativePanic("decode reservation belongs to a different G1 backend")
        self.native.release_decode_reservation(res)

    # -- destination reservations
    def reserve_destination_at(
        self, owner: int, sequence: NewActiveSequence, eviction_now_ms: float | None = None
    ) -> DestinationReservation | KvbmDestination | G1Acquire:
        """``reserve_destination_at(owner, sequence, eviction_now_ms)``: the prompt's layout,
        reserved (native: the PLH alignment is validated first). ``eviction_now_ms`` reaches the
        backends, which use it only with an offload engine (not modelled)."""
        sig = sequence.prepare_allocation(sequence.num_input_tokens)
        if self.kvbm is not None:
            d = self.kvbm.reserve_destination(sig, eviction_now_ms)
            return CAPACITY_EXHAUSTED if d is None else d
        if sig is not None:
            validate_plh_alignment(sig.blocks, len(sig.plhs))
        r = self.native.reserve_destination(owner, None if sig is None else layout_of(sig), sequence.num_input_tokens)
        return CAPACITY_EXHAUSTED if r is None else r

    def activate_destination(self, res: Any) -> None:
        if self.kvbm is not None:
            if not isinstance(res, KvbmDestination):
                raise NativePanic("destination reservation belongs to a different G1 backend")
            self.kvbm.activate_destination(res)
            return
        if not isinstance(res, DestinationReservation):
            raise NativePanic("destination reservation belongs to a different G1 backend")
        self.native.activate_destination(res)

    def cancel_destination(self, res: Any) -> None:
        if self.kvbm is not None:
            if not isinstance(res, KvbmDestination):
                raise NativePanic("destination reservation belongs to a different G1 backend")
            self.kvbm.cancel_destination(res)
            return
        if not isinstance(res, DestinationReservation):
            raise NativePanic("destination reservation belongs to a different G1 backend")
        self.native.cancel_destination(res)

    # -- metrics
    def num_active_blocks(self) -> int:
        return self.kvbm.num_active_blocks() if self.kvbm is not None else self.native.num_active_blocks()

    def num_active_block_refs(self) -> int:
        return self.kvbm.num_active_block_refs() if self.kvbm is not None else self.native.num_active_block_refs()

    def num_inactive_blocks(self) -> int:
        return self.kvbm.num_inactive_blocks() if self.kvbm is not None else self.native.num_inactive_blocks()

    def max_capacity(self) -> int:
        return self.kvbm.max_capacity if self.kvbm is not None else self.native.pool.capacity

    def get_prefill_cost(self, sequence: NewActiveSequence) -> dict[str, int]:
        if self.kvbm is not None:
            return self.kvbm.get_prefill_cost(sequence.unique, sequence.plhs, len(sequence), sequence.caching)
        return self.native.get_prefill_cost(sequence.unique, len(sequence), sequence.caching)


def _toks(t: tuple[int, ...] | None) -> list[int] | None:
    return None if t is None else list(t)
