"""The Rust tests of the KVBM backend (``kvbm_backend.rs``, fa6894c9a) as vectors: the harness over
``KvbmKvManager``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvmodel.components.g1_native.vectors import (
    SequenceHarness,
    _signals_view,
    _slot_list,
    event_view,
    kvbm_views,
    plh_from,
    plh_key,
    publishers_of,
)
from kvmodel.model.blocks import FullBlock
from kvmodel.model.g1.acquire import CAPACITY_EXHAUSTED, G1Acquire, Ready
from kvmodel.model.g1.sequence import PLH, G1Signal, G1Use
from kvmodel.vectors.notation import Uninterpretable, int_of


class KvbmBackendHarness(SequenceHarness):
    """``kv_manager/kvbm_backend.rs`` (fa6894c9a) driven directly."""

    component = "kvbm_backend"
    model_component = "g1_kvbm"

    def __init__(self, vector: dict[str, Any], quirks: frozenset[str]) -> None:
        from kvmodel.model.g1.kvbm_backend import KvbmKvManager

        super().__init__(vector, quirks)
        c = self.constructor
        backend = str(c.get("eviction_backend", "Lineage")).split()[0]
        self.m = KvbmKvManager(
            c["max_capacity"],
            c["block_size"],
            eviction_backend=backend,
            publishers=publishers_of(c),
            dp_rank=c.get("dp_rank", 0),
            quirks=quirks,
        )
        self.res: dict[str, Any] = {}
        self.allocations: dict[str, list[int]] = {}

    def block_size(self) -> int | None:
        return self.m.block_size

    def observe(self) -> dict[str, Any]:
        return kvbm_views(self.m)

    def drain(self) -> list[Any]:
        return [event_view(p) for p in self.m.drain_events()]

    def named_views(self) -> dict[str, Any]:
        from kvmodel.model.g1.kvbm_backend import KvbmDecodeReservation, KvbmDestination

        out = super().named_views()
        for n, r in self.res.items():
            if isinstance(r, KvbmDestination):
                out[n] = {
                    "name": n,
                    "kind": "VllmDestinationReservation",
                    "len": len(r.pinned) + len(r.unpublished),
                    "block_ids": [self.m.sub.block_of(p) for _, p in r.pinned] + list(r.unpublished),
                    "cached_prefix": [h for h, _ in r.pinned],
                    "unpublished_blocks": list(r.unpublished),
                }
            elif isinstance(r, KvbmDecodeReservation):
                out[n] = {"name": n, "kind": "DecodeBlockReservation", "len": len(r.slots), "blocks": list(r.slots)}
        for n, slots in self.allocations.items():
            out[n] = {"name": n, "len": len(slots), "block_ids": list(slots), "slots": list(slots)}
        return out

    def calls(self) -> dict[str, Callable[..., Any]]:
        def transferable(obj: Any, block_size: Any) -> int:
            r = self.res.get(str(obj.get("name"))) if isinstance(obj, dict) else None
            if r is None or not hasattr(r, "transferable_prompt_tokens"):
                raise Uninterpretable("transferable_prompt_tokens(...) needs a destination reservation")
            return int(r.transferable_prompt_tokens(block_size))

        def plh(_obj: Any, *parts: Any) -> str | None:
            if len(parts) == 1:
                return plh_key((parts[0], None, 0))
            return plh_key(tuple(parts))

        def active_block_ids(_obj: Any, seq: Any) -> list[int]:
            s = seq if isinstance(seq, dict) else None
            blocks = [] if s is None else s["unique_blocks"]
            out = []
            for b in blocks:
                if "F" in b and b["F"] in self.m.active_full:
                    out.append(self.m.active_full[b["F"]].block)
                elif "P" in b and b["P"] in self.m.active_partial:
                    out.append(self.m.active_partial[b["P"]])
            return out

        return {"transferable_prompt_tokens": transferable, "plh": plh, "active_block_ids": active_block_ids}

    def process_signal(self, sig: Any) -> Any:
        return self.m.process(sig)

    def _one(self, a: dict[str, Any]) -> G1Signal:
        if any(k in a for k in ("Use", "Deref", "Promote")):
            sigs = self.signals({k: v for k, v in a.items() if k in ("Use", "Deref", "Promote")})
        elif "signal" in a or "event" in a:
            sigs = self.signals(a.get("signal", a.get("event")))
        else:
            raise Uninterpretable(f"no signal in {sorted(a)}")
        if len(sigs) != 1:
            raise Uninterpretable(f"expected one signal, got {len(sigs)}")
        return sigs[0]

    def op_process(self, a: dict[str, Any]) -> dict[str, Any]:
        sig = self._one(a)
        out: dict[str, Any] = {"returns": self.m.process(sig), **_signals_view(sig)}
        if isinstance(sig, G1Use):
            full = [b for b in sig.blocks if isinstance(b, FullBlock)]
            if len(full) == 1 and full[0].hash in self.m.active_full:
                out["block_id"] = self.m.active_full[full[0].hash].block
        return out

    def op_process_signal(self, a: dict[str, Any]) -> dict[str, Any]:
        sigs = self.signals(a.get("signal", a.get("signals")))
        out: dict[str, Any] = {"signal": sigs[0].to_json() if len(sigs) == 1 else None}
        out["signals"] = [x.to_json() for x in sigs]
        for x in sigs:
            out["returns"] = self.m.process(x)
        return out

    op_process_signals = op_process_signal

    def op_process_decode_signal(self, a: dict[str, Any]) -> None:
        self.m.process_decode_signal(self._one(a), self._res(a["reservation"]))

    def _res(self, name: Any) -> Any:
        if name not in self.res:
            raise Uninterpretable(f"no reservation named {name!r}")
        return self.res[name]

    def op_set_capacity_generation(self, a: dict[str, Any]) -> None:
        v = int_of(a.get("value"))
        if v is None:
            raise Uninterpretable("set_capacity_generation needs an integer 'value'")
        self.m.capacity_generation = v

    def op_validate_retry_witness(self, a: dict[str, Any]) -> None:
        self.m.validate_retry_witness(
            a["attempted_generation"], a["retried"], a["witness_generation"], a["released_slots"]
        )

    def op_reserve_decode_blocks(self, a: dict[str, Any]) -> G1Acquire:
        r = self.m.reserve_decode_blocks(int(a["count"]))
        if r is not None and a.get("as"):
            self.res[str(a["as"])] = r
        return CAPACITY_EXHAUSTED if r is None else Ready()

    def op_reserve_destination_at(self, a: dict[str, Any]) -> dict[str, Any]:
        s = self.seq(a["sequence"])
        d = self.m.reserve_destination(s.prepare_allocation(s.num_input_tokens), a.get("eviction_now_ms"))
        if d is None:
            return {"returns": CAPACITY_EXHAUSTED}
        if a.get("as"):
            self.res[str(a["as"])] = d
        return {
            "returns": Ready(),
            "unpublished": len(d.unpublished),
            "transferable_prompt_tokens": d.transferable_prompt_tokens(self.m.block_size),
        }

    def op_activate_destination(self, a: dict[str, Any]) -> None:
        self.m.activate_destination(self.res.pop(a["reservation"]))

    def op_drop_reservation(self, a: dict[str, Any]) -> None:
        from kvmodel.model.g1.kvbm_backend import KvbmDecodeReservation

        name = str(a.get("reservation", a.get("value")))
        if name in self.allocations:
            for s_ in self.allocations.pop(name):
                self.m.sub.release_mutable(s_)
            return
        r = self.res.pop(name, None)
        if r is None:
            raise Uninterpretable(f"no reservation named {name!r}")
        if isinstance(r, KvbmDecodeReservation):
            self.m.release_decode_reservation(r)
        else:
            self.m.cancel_destination(r)

    op_release_decode_reservation = op_drop_reservation
    op_cancel_destination = op_drop_reservation
    op_drop = op_drop_reservation

    def op_allocate_unpublished_blocks(self, a: dict[str, Any]) -> dict[str, Any]:
        got = self.m.allocate_unpublished_blocks(int(a["count"]), a.get("eviction_now_ms"))
        if got is None:
            return {"returns": CAPACITY_EXHAUSTED}
        if a.get("as"):
            self.allocations[str(a["as"])] = got
        return {"returns": Ready(len(got)), "block_ids": list(got)}

    def op_construct_destination_reservation(self, a: dict[str, Any]) -> None:
        name = a.get("as")
        if not isinstance(name, str):
            raise Uninterpretable("construct_destination_reservation needs 'as'")
        unpub = a.get("unpublished_blocks", [])
        if isinstance(unpub, str):
            if unpub not in self.allocations:
                raise Uninterpretable(f"no allocation named {unpub!r}")
            slots = self.allocations.pop(unpub)
        else:
            slots = _slot_list(unpub)
        prefix: list[tuple[int, PLH]] = []
        for entry in self.symbol(a.get("cached_prefix") or []):
            if isinstance(entry, dict) and "seq_hash" in entry:
                prefix.append((int(entry["seq_hash"]), plh_from(entry.get("plh"))))
            elif isinstance(entry, list) and len(entry) == 2:
                prefix.append((int(entry[0]), plh_from(entry[1])))
            else:
                raise Uninterpretable(f"a cached prefix entry is {{seq_hash, plh}}, got {entry!r}")
        lay = a.get("layout")
        sig = None if lay is None else self.signals(lay)[0]
        if sig is not None and not isinstance(sig, G1Use):
            raise Uninterpretable("a destination layout is a Use")
        self.res[name] = self.m.construct_destination_reservation(prefix, slots, sig)

    def op_get_prefill_cost(self, a: dict[str, Any]) -> dict[str, Any]:
        s = self.seq(a["sequence"])
        cost = self.m.get_prefill_cost(s.unique, s.plhs, len(s), s.caching)
        return {"returns": cost, **cost}

    def op_num_active_blocks(self, a: dict[str, Any]) -> int:
        return self.m.num_active_blocks()

    def op_num_inactive_blocks(self, a: dict[str, Any]) -> int:
        return self.m.num_inactive_blocks()

    def op_num_active_block_refs(self, a: dict[str, Any]) -> int:
        return self.m.num_active_block_refs()

    def op_active_block_ids(self, a: dict[str, Any]) -> list[int]:
        s = self.seq(a["sequence"])
        return self.calls()["active_block_ids"](None, self._seq_view(s))  # type: ignore[no-any-return]


HARNESSES = (KvbmBackendHarness,)
