"""``G1Manager``: the facade over one backend, chosen at construction (§2.3).

Real code: ``lib/mocker/src/kv_manager/g1_manager.rs`` commit 6125e8260 (finalize, then promote
the computed tail); commit 366ff0ef promoted the tail first (quirk
``promote_tail_before_finalize``, §6 #18: the tail's Stored names a parent that has not
been published yet). The default backend is KVBM (``new_with_event_sink`` →
:class:`~kvmodel.model.g1.kvbm_backend.KvbmKvManager` with the Lineage eviction backend); the native one
is chosen with ``backend="native"``. Quirks are the union of both components' names; each
backend reads its own.

The facade holds one :class:`G1ManagerBackend` — the arms of ``g1_manager.rs``'s ``match`` on its
backend enum: :class:`KvbmArm` over ``kvbm_backend::KvManager`` and :class:`NativeArm` over
``vllm_backend::VllmKvManager``. Each arm is what Rust does in that arm (the native one validates
PLH alignment and promotes the computed tail; the KVBM one ignores owners and reusable prefixes).

Results are the real ``G1Acquire`` values (``kvmodel.model.g1.acquire``: ``Ready(n)`` and
``CapacityExhausted``, whose text is what traces record); reservations are returned as objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from kvmodel.model.blocks import FullBlock, UniqueBlock
from kvmodel.model.errors import InvalidInput, NativePanic
from kvmodel.model.g1.acquire import CAPACITY_EXHAUSTED, G1Acquire, Ready
from kvmodel.model.g1.kvbm_backend import KvbmDecodeReservation, KvbmDestination, KvbmKvManager
from kvmodel.model.g1.sequence import ActiveSequence, G1Deref, G1Promote, G1Signal, G1Use
from kvmodel.model.g1.vllm_backend import (
    NativeDecodeBlockReservation,
    NativeDestinationReservation,
    Published,
    VllmBlockLayout,
    VllmKvManager,
)


def validate_plh_alignment(blocks: Sequence[UniqueBlock], plh_count: int) -> None:
    """``validate_plh_alignment`` (g1_manager.rs 6125e8260): a Use's PLHs are one per full block,
    else ``assert_eq!`` panics "PLHs must align with full blocks". Called where Rust calls it:
    the native backend's ``process_for_request`` Use, its decode-path Use and its destination
    reservation's layout."""
    full_blocks = sum(1 for b in blocks if isinstance(b, FullBlock))
    if plh_count != full_blocks:
        raise NativePanic("PLHs must align with full blocks", f"left: {plh_count}, right: {full_blocks}")


def layout_of(sig: G1Use) -> VllmBlockLayout:
    return VllmBlockLayout(
        list(sig.blocks),
        list(sig.local_hashes),
        None if sig.token_ids is None else [list(t) for t in sig.token_ids],
        sig.parent,
    )


class G1ManagerBackend(Protocol):
    """What the facade asks of its backend (one arm of ``g1_manager.rs``'s ``match``). A
    reservation from the other backend is a panic ("... belongs to a different G1 backend");
    ``reserve_*`` return ``None`` where Rust returns ``G1Acquire::CapacityExhausted``."""

    name: str

    def clone(self) -> G1ManagerBackend: ...
    def key(self) -> tuple[Any, ...]: ...
    def snapshot(self) -> dict[str, Any]: ...
    def block_size(self) -> int: ...
    def drain_events(self) -> list[Published]: ...
    def process_for_request(self, owner: int, sig: G1Signal, reusable_prefix_blocks: int) -> G1Acquire: ...
    def process(self, sig: G1Signal) -> G1Acquire: ...
    def finalize_computed_prefix(self, owner: int, before: int, after: int, sequence: ActiveSequence) -> None: ...
    def reserve_decode_blocks(self, count: int) -> Any | None: ...
    def process_decode_signal_for_request(self, owner: int, sig: G1Signal, res: Any) -> G1Acquire: ...
    def release_decode_reservation(self, res: Any) -> None: ...
    def reserve_destination_at(
        self, owner: int, sequence: ActiveSequence, eviction_now_ms: float | None
    ) -> Any | None: ...
    def activate_destination(self, res: Any) -> None: ...
    def cancel_destination(self, res: Any) -> None: ...
    def num_active_blocks(self) -> int: ...
    def num_active_block_refs(self) -> int: ...
    def num_inactive_blocks(self) -> int: ...
    def max_capacity(self) -> int: ...
    def dp_rank(self) -> int: ...
    def get_prefill_cost(self, sequence: ActiveSequence) -> dict[str, int]: ...


def _own(res: Any, cls: type) -> None:
    if not isinstance(res, cls):
        if cls in (KvbmDecodeReservation, NativeDecodeBlockReservation):
            raise NativePanic("decode reservation belongs to a different G1 backend")
        raise NativePanic("destination reservation belongs to a different G1 backend")


class _Arm:
    """What both arms do alike: the calls that go straight to the backend's manager ``m``, with
    the reservation checked to be this backend's first."""

    m: Any
    DECODE: type
    DESTINATION: type

    def snapshot(self) -> dict[str, Any]:
        out: dict[str, Any] = self.m.snapshot()
        return out

    def block_size(self) -> int:
        return int(self.m.block_size)

    def drain_events(self) -> list[Published]:
        out: list[Published] = self.m.drain_events()
        return out

    def reserve_decode_blocks(self, count: int) -> Any | None:
        return self.m.reserve_decode_blocks(count)

    def release_decode_reservation(self, res: Any) -> None:
        _own(res, self.DECODE)
        self.m.release_decode_reservation(res)

    def activate_destination(self, res: Any) -> None:
        _own(res, self.DESTINATION)
        self.m.activate_destination(res)

    def cancel_destination(self, res: Any) -> None:
        _own(res, self.DESTINATION)
        self.m.cancel_destination(res)

    def num_active_blocks(self) -> int:
        return int(self.m.num_active_blocks())

    def num_active_block_refs(self) -> int:
        return int(self.m.num_active_block_refs())

    def num_inactive_blocks(self) -> int:
        return int(self.m.num_inactive_blocks())

    def dp_rank(self) -> int:
        return int(self.m.dp_rank)


class KvbmArm(_Arm):
    """``G1ManagerBackend::Kvbm``: every call goes to ``kvbm_backend::KvManager``
    (:class:`~kvmodel.model.g1.kvbm_backend.KvbmKvManager`); owners and reusable prefixes are ignored and
    the lifecycle is eager (finalizing is a no-op)."""

    name = "kvbm"
    DECODE, DESTINATION = KvbmDecodeReservation, KvbmDestination
    m: KvbmKvManager

    def __init__(self, m: KvbmKvManager) -> None:
        self.m = m

    def clone(self) -> KvbmArm:
        return KvbmArm(self.m.clone())

    def key(
        self, owner: Callable[[int], int] | None = None, uuid: Callable[[str], str] | None = None
    ) -> tuple[Any, ...]:
        """The manager's key; with ``uuid``, its partial names renamed (the KVBM backend keeps no
        request ids: ``owner`` is unused)."""
        return tuple(self.m.key(uuid))

    def process_for_request(self, owner: int, sig: G1Signal, reusable_prefix_blocks: int) -> G1Acquire:
        return self.m.process(sig)

    def process(self, sig: G1Signal) -> G1Acquire:
        return self.m.process(sig)

    def finalize_computed_prefix(self, owner: int, before: int, after: int, sequence: ActiveSequence) -> None:
        return None

    def process_decode_signal_for_request(self, owner: int, sig: G1Signal, res: Any) -> G1Acquire:
        _own(res, KvbmDecodeReservation)
        return self.m.process_decode_signal(sig, res)

    def reserve_destination_at(
        self, owner: int, sequence: ActiveSequence, eviction_now_ms: float | None
    ) -> KvbmDestination | None:
        return self.m.reserve_destination(sequence.prepare_allocation(sequence.num_input_tokens), eviction_now_ms)

    def max_capacity(self) -> int:
        return self.m.max_capacity

    def get_prefill_cost(self, sequence: ActiveSequence) -> dict[str, int]:
        return self.m.get_prefill_cost(sequence.unique, sequence.plhs, len(sequence), sequence.caching)


class NativeArm(_Arm):
    """``G1ManagerBackend::Native``: ``vllm_backend::VllmKvManager``
    (:class:`~kvmodel.model.g1.vllm_backend.VllmKvManager`) with the facade's part of that arm —
    PLH alignment checked before a Use, a decode Use and a destination reservation; Deref and
    Promote take no reusable prefix; finalizing a decision promotes the computed tail (6125e8260:
    after caching; ``promote_tail_before_finalize``, commit 366ff0ef: before)."""

    name = "native"
    DECODE, DESTINATION = NativeDecodeBlockReservation, NativeDestinationReservation
    m: VllmKvManager

    def __init__(self, m: VllmKvManager, quirks: frozenset[str]) -> None:
        self.m, self.quirks = m, quirks

    def clone(self) -> NativeArm:
        return NativeArm(self.m.clone(), self.quirks)

    def key(
        self, owner: Callable[[int], int] | None = None, uuid: Callable[[str], str] | None = None
    ) -> tuple[Any, ...]:
        return self.m.key(owner, uuid)

    def process_for_request(self, owner: int, sig: G1Signal, reusable_prefix_blocks: int) -> G1Acquire:
        m = self.m
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
        raise NativePanic("native G1 operations require a request owner")

    def finalize_computed_prefix(self, owner: int, before: int, after: int, sequence: ActiveSequence) -> None:
        if "promote_tail_before_finalize" in self.quirks:
            self._promote_tail(owner, after, sequence)
            self.m.finalize_computed_prefix(owner, before, after)
            return
        self.m.finalize_computed_prefix(owner, before, after)
        self._promote_tail(owner, after, sequence)

    def _promote_tail(self, owner: int, after: int, sequence: ActiveSequence) -> None:
        p = sequence.promote_computed_tail(after)
        if p is not None and not isinstance(self.process_for_request(owner, p, 0), Ready):
            raise NativePanic("computed-tail promotion must be infallible")

    def process_decode_signal_for_request(self, owner: int, sig: G1Signal, res: Any) -> G1Acquire:
        _own(res, NativeDecodeBlockReservation)
        if isinstance(sig, G1Use):
            validate_plh_alignment(sig.blocks, len(sig.plhs))
            out = self.m.use_decode_reservation(owner, layout_of(sig), res)
            if not isinstance(out, Ready) or out.n != len(sig.blocks):
                raise NativePanic("reserved decode allocation must be infallible")
            return out
        return self.process_for_request(owner, sig, 0)

    def reserve_destination_at(
        self, owner: int, sequence: ActiveSequence, eviction_now_ms: float | None
    ) -> NativeDestinationReservation | None:
        sig = sequence.prepare_allocation(sequence.num_input_tokens)
        if sig is not None:
            validate_plh_alignment(sig.blocks, len(sig.plhs))
        return self.m.reserve_destination(owner, None if sig is None else layout_of(sig), sequence.num_input_tokens)

    def max_capacity(self) -> int:
        return self.m.pool.capacity

    def get_prefill_cost(self, sequence: ActiveSequence) -> dict[str, int]:
        return self.m.get_prefill_cost(sequence.unique, len(sequence), sequence.caching)


class G1Manager:
    """``G1Manager``: KVBM by default (``new_with_event_sink`` / ``new_with_eviction_backend``),
    or the native backend (``new_with_backend_and_caching(..., Native, caching)``); every call
    goes to the one :class:`G1ManagerBackend` it holds (``self.arm``)."""

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
        self.arm: G1ManagerBackend
        if backend == "kvbm":
            self.arm = KvbmArm(
                KvbmKvManager(
                    max_capacity,
                    block_size,
                    eviction_backend=eviction_backend,
                    publishers=publishers,
                    dp_rank=dp_rank,
                    quirks=self.quirks,
                )
            )
        else:
            native = VllmKvManager(
                max_capacity,
                block_size,
                enable_prefix_caching=enable_prefix_caching,
                publishers=publishers,
                dp_rank=dp_rank,
                quirks=self.quirks,
            )
            self.arm = NativeArm(native, frozenset(self.quirks))

    @property
    def kvbm(self) -> KvbmKvManager | None:
        """The KVBM backend's manager (``G1ManagerBackend::Kvbm``), or ``None`` on the native
        backend: a read-only view, as :attr:`native` is."""
        return self.arm.m if isinstance(self.arm, KvbmArm) else None

    @property
    def native(self) -> VllmKvManager:
        """The native backend's manager (``G1ManagerBackend::Native``): a read-only view for the
        harness, the invariants and the vectors, which read its state. On the KVBM backend a
        ``TypeError``, a bug of the caller: it is no rejection of the real code's, so it must not
        be recorded as one."""
        if not isinstance(self.arm, NativeArm):
            raise TypeError("G1Manager.native read on the KVBM backend")
        return self.arm.m

    def clone(self) -> G1Manager:
        c = G1Manager.__new__(G1Manager)
        c.quirks, c.backend = self.quirks, self.backend
        c.arm = self.arm.clone()
        return c

    def key(self) -> tuple[Any, ...]:
        """The observable state, canonical (the backend's)."""
        return self.arm.key()

    def snapshot(self) -> dict[str, Any]:
        return self.arm.snapshot()

    @property
    def block_size(self) -> int:
        return self.arm.block_size()

    def drain_events(self) -> list[Published]:
        return self.arm.drain_events()

    # -- signals
    def process_for_request(self, owner: int, sig: G1Signal, reusable_prefix_blocks: int = 0) -> G1Acquire:
        """Native: a Use's PLHs must align with its full blocks; Deref and Promote take no
        reusable prefix and always return ``Ready(1)`` (§6 #25 for KVBM: the same shape). KVBM
        ignores the owner and the reusable prefix."""
        return self.arm.process_for_request(owner, sig, reusable_prefix_blocks)

    def process(self, sig: G1Signal) -> G1Acquire:
        return self.arm.process(sig)

    def finalize_computed_prefix(self, owner: int, before: int, after: int, sequence: ActiveSequence) -> None:
        """Cache and publish the blocks this decision computed, then promote the computed tail
        (6125e8260). With ``promote_tail_before_finalize`` (commit 366ff0ef) the other way round.
        KVBM: a no-op (its lifecycle is eager)."""
        self.arm.finalize_computed_prefix(owner, before, after, sequence)

    # -- decode reservations
    def reserve_decode_blocks(self, count: int) -> NativeDecodeBlockReservation | KvbmDecodeReservation | G1Acquire:
        r = self.arm.reserve_decode_blocks(count)
        return CAPACITY_EXHAUSTED if r is None else r

    def process_decode_signal_for_request(self, owner: int, sig: G1Signal, res: Any) -> G1Acquire:
        return self.arm.process_decode_signal_for_request(owner, sig, res)

    def release_decode_reservation(self, res: Any) -> None:
        self.arm.release_decode_reservation(res)

    # -- destination reservations
    def reserve_destination_at(
        self, owner: int, sequence: ActiveSequence, eviction_now_ms: float | None = None
    ) -> NativeDestinationReservation | KvbmDestination | G1Acquire:
        """``reserve_destination_at(owner, sequence, eviction_now_ms)``: the prompt's layout,
        reserved (native: the PLH alignment is validated first). ``eviction_now_ms`` reaches the
        backends, which use it only with an offload engine (not modelled)."""
        r = self.arm.reserve_destination_at(owner, sequence, eviction_now_ms)
        return CAPACITY_EXHAUSTED if r is None else r

    def activate_destination(self, res: Any) -> None:
        self.arm.activate_destination(res)

    def cancel_destination(self, res: Any) -> None:
        self.arm.cancel_destination(res)

    # -- metrics
    def num_active_blocks(self) -> int:
        return self.arm.num_active_blocks()

    def num_active_block_refs(self) -> int:
        return self.arm.num_active_block_refs()

    def num_inactive_blocks(self) -> int:
        return self.arm.num_inactive_blocks()

    def max_capacity(self) -> int:
        return self.arm.max_capacity()

    def get_active_perc(self) -> float:
        """``num_active_blocks() as f64 / max_capacity as f64`` (both backends; the capacity is
        never 0: both constructors panic on it)."""
        return self.num_active_blocks() / self.max_capacity()

    def dp_rank(self) -> int:
        """The data-parallel rank the backend stamps on its events."""
        return self.arm.dp_rank()

    def get_prefill_cost(self, sequence: ActiveSequence) -> dict[str, int]:
        return self.arm.get_prefill_cost(sequence)


def _toks(t: tuple[int, ...] | None) -> list[int] | None:
    return None if t is None else list(t)
