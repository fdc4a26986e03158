"""Harnesses of the G1 era: ``native_vllm_block_pool``, ``native_vllm_backend``,
``g1_manager`` and ``kvbm_backend``.

Shared: named ``ActiveSequence`` objects (``new_sequence {name, tokens, max_output_tokens,
block_size, enable_prefix_caching, emit_token_ids}``; any of the sequence's own methods as
``sequence_<method> {seq, ...}``; symbols ``S.h[i]`` / ``S.lh[i]`` / ``S.plh[i]`` / ``S.u[k]``),
signals given as JSON (``{"Use": {...}}``, ``{"Deref": [...]}``, ``{"Promote": {...}}``, with
symbols inside) or as an expression on a sequence (``"S.take_creation_signal()"``,
``"S.prepare_allocation(256)"``, ``"S.reset_with_signal()"``), and events in the vectors'
``events_new`` notation (``{"Stored": {"parent_hash", "blocks": [{"block_hash",
"tokens_hash"}], "num_blocks"}, "event_id", "dp_rank", "block_token_ids"?}`` /
``{"Removed": {"block_hashes"}}``). A publisher exists unless the constructor's ``publishers``
says none (``"none"``, ``"KvEventPublishers::default()"``, ``false``).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from kvmodel.model.blocks import PartialBlock, UniqueBlock, block_from_json
from kvmodel.model.errors import InvalidInput
from kvmodel.model.events import Removed, Stored
from kvmodel.model.g1.acquire import CAPACITY_EXHAUSTED, G1Acquire, Ready
from kvmodel.model.g1.g1_manager import G1Manager
from kvmodel.model.g1.sequence import PLH, ActiveSequence, G1Signal, signal_from_json
from kvmodel.model.g1.vllm_backend import Published, VllmBlockLayout, VllmKvManager
from kvmodel.model.g1.vllm_block_pool import NativePool, Reservation
from kvmodel.vectors.harness import Harness
from kvmodel.vectors.notation import Uninterpretable, int_of, tokens
from kvmodel.vectors.script import SEQUENCE_METHODS, Script


def event_view(p: Published) -> dict[str, Any]:
    """An event in the vectors' ``events_new`` notation (plus flattened ``blocks`` / ``parent_hash``)."""
    e = p.event
    out: dict[str, Any] = {"event_id": e.event_id, "dp_rank": e.dp_rank}
    if p.block_token_ids is not None:
        out["block_token_ids"] = p.block_token_ids
    if isinstance(e.data, Stored):
        blocks = [{"block_hash": b.block_hash, "tokens_hash": b.tokens_hash} for b in e.data.blocks]
        out["Stored"] = {"parent_hash": e.data.parent_hash, "blocks": blocks, "num_blocks": len(blocks)}
        out["blocks"], out["parent_hash"] = blocks, e.data.parent_hash
    elif isinstance(e.data, Removed):
        out["Removed"] = {"block_hashes": list(e.data.block_hashes)}
        out["block_hashes"] = list(e.data.block_hashes)
    return out


def publishers_of(c: dict[str, Any]) -> bool:
    """Whether the constructor gives the manager an event sink (a capturing one by default)."""
    v = c.get("publishers", c.get("kv_event_publishers", c.get("sink", True)))
    if v is None or v is False:
        return False
    text = str(v).strip().lower()
    return not (text in ("", "none", "false", "no", "empty") or "default()" in text or text.startswith("none"))


def plh_json(p: PLH) -> dict[str, Any]:
    return {"seq": p[0], "parent": p[1], "pos": p[2]}


def plh_key(p: Any) -> str | None:
    """The key a PLH has in observed maps: ``plh(s)`` for a root PLH ``(s, None, 0)``, else
    ``plh(s, p, k)``."""
    if isinstance(p, dict) and {"seq", "pos"} <= set(p):
        p = (p["seq"], p.get("parent"), p["pos"])
    if isinstance(p, tuple | list) and len(p) == 3:
        s, par, k = p
        return f"plh({s})" if par is None and k == 0 else f"plh({s}, {'None' if par is None else par}, {k})"
    return None


def plh_from(spec: Any) -> PLH:
    if isinstance(spec, dict) and "seq" in spec and "pos" in spec:
        return (int(spec["seq"]), None if spec.get("parent") is None else int(spec["parent"]), int(spec["pos"]))
    if isinstance(spec, list | tuple) and len(spec) == 3:
        return (int(spec[0]), None if spec[1] is None else int(spec[1]), int(spec[2]))
    m = re.fullmatch(r"\s*plh\((\d+)(?:\s*,\s*(?:Some\()?(\d+|None|null)\)?\s*,\s*(\d+))?\)\s*", str(spec))
    if m:
        par = None if m.group(2) in (None, "None", "null") else int(m.group(2))
        return (int(m.group(1)), par, int(m.group(3) or 0))
    raise Uninterpretable(f"cannot read the PLH {spec!r}")


class SequenceHarness(Harness):
    """Named new-era ``ActiveSequence`` objects and signals built from them."""

    default_block_size: int = 16

    def __init__(self, vector: dict[str, Any], quirks: frozenset[str]) -> None:
        super().__init__(vector, quirks)
        self.seqs: dict[str, ActiveSequence] = {}
        self.last_seq: str | None = None

    # -- symbols
    def symbol(self, x: Any) -> Any:
        """``"S.h[1]"`` / ``"S.lh[0]"`` / ``"S.plh[0]"`` / ``"S.u0"`` / ``"S.u[0]"`` resolved;
        everything else unchanged (recursively in lists and objects)."""
        if isinstance(x, str):
            m = re.fullmatch(r"\s*(\w+)\.(h|lh|plh|u)\[(\d+)\]\s*", x)
            if m and m.group(1) in self.seqs:
                s = self.seqs[m.group(1)]
                k = int(m.group(3))
                if m.group(2) == "u":
                    return f"{s.name}.u{k}"
                tables: dict[str, list[Any]] = {"h": s.seq_hashes, "lh": s.local_hashes, "plh": s.plhs}
                table = tables[m.group(2)]
                if k >= len(table):
                    raise Uninterpretable(f"{x!r}: {m.group(1)} has {len(table)} such hashes")
                return plh_json(table[k]) if m.group(2) == "plh" else table[k]
            m = re.fullmatch(r"\s*(\w+)\.u(\d+)\s*", x)
            if m and m.group(1) in self.seqs:
                return f"{self.seqs[m.group(1)].name}.u{m.group(2)}"
            return x
        if isinstance(x, list):
            return [self.symbol(e) for e in x]
        if isinstance(x, dict):
            return {k: self.symbol(v) for k, v in x.items()}
        return x

    def seq(self, name: Any) -> ActiveSequence:
        if not isinstance(name, str) or name not in self.seqs:
            raise Uninterpretable(f"no sequence named {name!r} (known: {sorted(self.seqs)})")
        self.last_seq = name
        return self.seqs[name]

    def _seq_view(self, s: ActiveSequence) -> dict[str, Any]:
        return {
            "name": s.name,
            "h": list(s.seq_hashes),
            "lh": list(s.local_hashes),
            "plh": [plh_json(p) for p in s.plhs],
            "u": [f"{s.name}.u{k}" for k in range(s._uuids)],
            "unique_blocks": [b.to_json() for b in s.unique],
            "len": len(s),
            "tokens": list(s.tokens),
            "num_input_tokens": s.num_input_tokens,
            "num_allocated_tokens": s.num_allocated_tokens,
            "generated_tokens": s.generated_tokens,
            "max_output_tokens": s.max_output_tokens,
            "block_size": s.block_size,
            "enable_prefix_caching": s.caching,
            "positional_lineage_hashes": [plh_json(p) for p in s.plhs],
        }

    def named_views(self) -> dict[str, Any]:
        out: dict[str, Any] = {n: self._seq_view(s) for n, s in self.seqs.items()}
        if self.last_seq in self.seqs:
            for k, v in self._seq_view(self.seqs[self.last_seq]).items():
                out.setdefault(k, v)
        return out

    def key_of(self, v: Any) -> str | None:
        return plh_key(v)

    # -- sequences
    def op_new_sequence(self, a: dict[str, Any]) -> None:
        name = a.get("name") or a.get("as")
        if not isinstance(name, str):
            raise Uninterpretable("new_sequence needs a 'name'")
        bs = int_of(a.get("block_size", self.default_block_size))
        if bs is None:
            raise Uninterpretable(f"block_size {a.get('block_size')!r} is not an integer")
        self.seqs[name] = ActiveSequence(
            tokens(a["tokens"]),
            int(a.get("max_output_tokens", 0)),
            bs,
            bool(a.get("enable_prefix_caching", True)),
            bool(a.get("emit_token_ids", False)),
            name=name,
        )
        self.last_seq = name

    def __getattr__(self, name: str) -> Any:
        if name.startswith("op_sequence_"):
            method = name[len("op_sequence_") :]
            if method in SEQUENCE_METHODS:
                return lambda a, _m=method: self._sequence_call(_m, a)
        raise AttributeError(name)

    def _sequence_call(self, method: str, a: dict[str, Any]) -> dict[str, Any]:
        s = self.seq(a.get("seq", a.get("sequence", self.last_seq)))
        args = [v for k, v in a.items() if k not in ("seq", "sequence")]
        out = Script({"_": s}, self.process_signal, SEQUENCE_METHODS).eval(
            f"_.{method}({', '.join(str(x) for x in args)})" if args else f"_.{method}()"
        )
        return {"returns": _json(out), **_signals_view(out)}

    def signals(self, spec: Any) -> list[G1Signal]:
        """A signal (JSON, symbols allowed) or an expression on a sequence yielding signals."""
        if isinstance(spec, dict):
            return [signal_from_json(self.symbol(spec))]
        if isinstance(spec, list):
            return [s for x in spec for s in self.signals(x)]
        if isinstance(spec, str):
            # "S.take_creation_signal() = Use([...])": the call, then prose saying what it gives
            call = re.match(r"\s*(\w+\.\w+\([^()]*\))\s*(=.*)?$", spec, re.S)
            if call:
                spec = call.group(1)
            out = Script(dict(self.seqs), self.process_signal, SEQUENCE_METHODS).eval(spec)
            m = re.match(r"\s*(\w+)\.", spec)
            if m and m.group(1) in self.seqs:
                self.last_seq = m.group(1)
            if out is None:
                return []
            return list(out) if isinstance(out, list) else [out]
        raise Uninterpretable(f"cannot read the signal {spec!r}")

    def process_signal(self, sig: Any) -> Any:
        raise Uninterpretable("this component processes no signals")

    def run_script(self, a: dict[str, Any]) -> dict[str, Any]:
        times = int_of(a.get("times", 1))
        body = a.get("body")
        if times is None or not isinstance(body, str) or not 0 <= times <= 10_000:
            raise Uninterpretable("repeat needs 'times' (0..10000) and a 'body' string")
        per: list[Any] = []
        processed: list[Any] = []

        def process(sig: Any) -> Any:
            processed.append(sig.to_json())
            return self.process_signal(sig)

        sc = Script(dict(self.seqs), process, SEQUENCE_METHODS)
        for _ in range(times):
            processed.clear()
            sc.run(body)
            per.append(list(processed))
        out: dict[str, Any] = {"signals_per_iteration": per}
        m = re.search(r"\b(\w+)\.\w+", body)
        if m and m.group(1) in self.seqs:
            self.last_seq = m.group(1)
        return out


def _json(x: Any) -> Any:
    if hasattr(x, "to_json"):
        return x.to_json()
    if isinstance(x, list):
        return [_json(e) for e in x]
    return x


def _signals_view(x: Any) -> dict[str, Any]:
    if isinstance(x, list):
        return {"signals": [_json(e) for e in x], "signal": _json(x[0]) if len(x) == 1 else None}
    if hasattr(x, "to_json"):
        return {"signal": x.to_json(), "signals": [x.to_json()]}
    return {}


# --------------------------------------------------------------------------- native pool


class NativePoolHarness(Harness):
    """``cache/vllm_block_pool.rs`` (2ee518f3d948): reservations and copies by name."""

    component = "native_vllm_block_pool"
    model_component = "g1_native"

    def __init__(self, vector: dict[str, Any], quirks: frozenset[str]) -> None:
        super().__init__(vector, quirks)
        cap = self.constructor.get("capacity", self.constructor.get("max_capacity"))
        self.pool = NativePool(cap, quirks)  # type: ignore[arg-type]
        self.res: dict[str, Reservation] = {}
        self.copies: dict[str, int] = {}

    def observe(self) -> dict[str, Any]:
        p = self.pool
        return {
            "num_active": p.num_active(),
            "num_inactive": p.num_inactive(),
            "lru_oldest_first": p.lru_hashes(),
            "free_capacity": p.free_capacity(),
            "capacity": p.capacity,
        }

    def _reserved(self, out: Any, a: dict[str, Any]) -> dict[str, Any]:
        if out is not None and a.get("as"):
            self.res[str(a["as"])] = out.reservation
        return {"returns": None if out is None else "reservation", "removed": [] if out is None else out.removed}

    def op_reserve(self, a: dict[str, Any]) -> dict[str, Any]:
        return self._reserved(self.pool.reserve(a["prefix"], a["fresh"]), a)

    def op_reserve_resident_prefix(self, a: dict[str, Any]) -> dict[str, Any]:
        return self._reserved(self.pool.reserve_resident_prefix(a["candidates"], a["total"]), a)

    def _r(self, name: Any) -> Reservation:
        if name not in self.res:
            raise Uninterpretable(f"no reservation named {name!r}")
        return self.res[name]

    def _c(self, name: Any) -> int:
        if name not in self.copies:
            raise Uninterpretable(f"no copy named {name!r}")
        return self.copies[name]

    def op_allocate_private(self, a: dict[str, Any]) -> None:
        c = self.pool.allocate_private(self._r(a["reservation"]))
        if a.get("as"):
            self.copies[str(a["as"])] = c

    def op_cache_private(self, a: dict[str, Any]) -> dict[str, Any]:
        v = self.pool.cache_private(self._c(a["copy"]), a["hash"])
        return {"returns": v, "became_visible": v}

    def op_release(self, a: dict[str, Any]) -> None:
        self.pool.release(self._c(a["copy"]))

    def op_cancel(self, a: dict[str, Any]) -> None:
        self.pool.cancel(self._r(a["reservation"]))

    def op_prefix_hit(self, a: dict[str, Any]) -> dict[str, Any]:
        hit = self.pool.prefix_hit(a["hash"])
        return {"returns": hit, "is_some": hit is not None, "is_none": hit is None, "is_active": bool(hit)}

    def op_num_active(self, a: dict[str, Any]) -> int:
        return self.pool.num_active()

    def op_num_inactive(self, a: dict[str, Any]) -> int:
        return self.pool.num_inactive()

    def op_counts(self, a: dict[str, Any]) -> None:
        return None


# --------------------------------------------------------------------------- native backend


def layout(a: dict[str, Any]) -> VllmBlockLayout:
    if not isinstance(a.get("blocks"), list):
        raise Uninterpretable("a Use layout needs 'blocks', a list")
    return VllmBlockLayout(
        [block_from_json(b) for b in a["blocks"]],
        list(a.get("local_hashes") or []),
        a.get("token_ids"),
        None if a.get("parent") is None else block_from_json(a["parent"]),
    )


class NativeViews:
    """Observations of ``VllmKvManager``: counts, the pool's LRU, the request tables, what the
    step evicted or made visible, prefix hits by hash."""

    def native_views(self, m: VllmKvManager, owners: set[Any], before_visible: set[int]) -> dict[str, Any]:
        visible = m.pool.visible()
        out: dict[str, Any] = {
            "num_active_blocks": m.num_active_blocks(),
            "num_inactive_blocks": m.num_inactive_blocks(),
            "num_active_block_refs": m.num_active_block_refs(),
            "inactive_lru_oldest_first": m.pool.lru_hashes(),
            "evicted": sorted(before_visible - visible),
            "prefix_hit": {str(h): m.prefix_hit(h) is not None for h in sorted(before_visible | visible)},
            "state": m.snapshot(),
            "request_blocks": {
                str(o): [{"hash": e.hash, "uuid": e.uuid, "copy": e.copy} for e in t]
                for o, t in sorted(m.tables.items())
            },
            "next_event_id": m.next_event_id,
            "block_size": m.block_size,
            "max_capacity": m.pool.capacity,
            "dp_rank": m.dp_rank,
            "get_active_perc": m.num_active_blocks() / m.pool.capacity,
        }
        for o in owners:
            out[f"table_of_owner_{o}"] = "present" if o in m.tables else "deleted"
            # ``request_block_count(owner)`` (test-only in the Rust): the blocks of its table
            out[f"request_block_count_of_{o}"] = len(m.tables.get(o, ()))
        return out


class NativeBackendHarness(SequenceHarness, NativeViews):
    """``kv_manager/vllm_backend.rs`` (2ee518f3d948) driven directly; owners are request ids."""

    component = "native_vllm_backend"
    model_component = "g1_native"

    def __init__(self, vector: dict[str, Any], quirks: frozenset[str]) -> None:
        super().__init__(vector, quirks)
        c = self.constructor
        self.m = VllmKvManager(
            c["max_capacity"],
            c["block_size"],
            enable_prefix_caching=c.get("enable_prefix_caching", True),
            publishers=publishers_of(c),
            dp_rank=c.get("dp_rank", 0),
            quirks=quirks,
        )
        self.owners: set[Any] = set()
        self.before_visible: set[int] = set()
        self.res: dict[str, Any] = {}

    def block_size(self) -> int | None:
        return self.m.block_size

    def call(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        self.before_visible = self.m.pool.visible()
        self.owners |= set(self.m.tables)
        if "owner" in args:
            self.owners.add(args["owner"])
        out = super().call(op, args)
        out.setdefault("became_visible", bool(self.m.pool.visible() - self.before_visible))
        return out

    def observe(self) -> dict[str, Any]:
        return self.native_views(self.m, self.owners, self.before_visible)

    def drain(self) -> list[Any]:
        self.before_visible_after = self.m.pool.visible()
        return [event_view(p) for p in self.m.drain_events()]

    def op_use_for_request(self, a: dict[str, Any]) -> G1Acquire:
        return self.m.use_for_request(a["owner"], layout(self.symbol(a)), a.get("reusable_prefix_blocks", 0))

    def op_finalize_computed_prefix(self, a: dict[str, Any]) -> dict[str, Any]:
        v = self.m.finalize_computed_prefix(a["owner"], a["computed_before"], a["computed_after"])
        return {"visited_positions": v, "returns": None}

    def op_deref_for_request(self, a: dict[str, Any]) -> None:
        self.m.deref_for_request(a["owner"], [block_from_json(b) for b in self.symbol(a["blocks"])])

    def op_promote_for_request(self, a: dict[str, Any]) -> None:
        self.m.promote_for_request(
            a["owner"], a["uuid"], a["hash"], a.get("parent"), a.get("local_hash"), a.get("token_ids")
        )

    def op_prefix_hit(self, a: dict[str, Any]) -> dict[str, Any]:
        hit = self.m.prefix_hit(self.symbol(a["hash"]))
        return {"returns": hit, "is_some": hit is not None, "is_none": hit is None, "is_active": bool(hit)}

    def op_reserve_decode_blocks(self, a: dict[str, Any]) -> G1Acquire:
        r = self.m.reserve_decode_blocks(a["count"])
        if r is not None and a.get("as"):
            self.res[str(a["as"])] = r
        return CAPACITY_EXHAUSTED if r is None else Ready()

    def op_use_decode_reservation_for_request(self, a: dict[str, Any]) -> G1Acquire:
        return self.m.use_decode_reservation(a["owner"], layout(self.symbol(a)), self._res(a["reservation"]))

    def op_release_decode_reservation(self, a: dict[str, Any]) -> None:
        self.m.release_decode_reservation(self.res.pop(a["reservation"]))

    def _res(self, name: Any) -> Any:
        if name not in self.res:
            raise Uninterpretable(f"no reservation named {name!r}")
        return self.res[name]

    def op_counts(self, a: dict[str, Any]) -> None:
        return None

    def op_num_active_blocks(self, a: dict[str, Any]) -> int:
        return self.m.num_active_blocks()

    def op_num_inactive_blocks(self, a: dict[str, Any]) -> int:
        return self.m.num_inactive_blocks()

    def op_num_active_block_refs(self, a: dict[str, Any]) -> int:
        return self.m.num_active_block_refs()


# --------------------------------------------------------------------------- G1 facade


class G1ManagerHarness(SequenceHarness, NativeViews):
    """``kv_manager/g1_manager.rs`` (6125e8260, the seed) over either backend (``backend``: Native
    or Kvbm in the constructor; Kvbm is the facade's default)."""

    component = "g1_manager"
    model_component = "g1_native"
    revisions = ((r"366ff0ef", "366ff0ef"), (r"\bR05\b", "6125e8260"), (r"6125e8260", "6125e8260"))

    def __init__(self, vector: dict[str, Any], quirks: frozenset[str]) -> None:
        super().__init__(vector, quirks)
        c = self.constructor
        backend = str(c.get("backend", "Kvbm")).lower()
        backend = "native" if backend.startswith(("native", "vllm")) else "kvbm"
        from kvmodel.model.quirks import faithful

        self.g = G1Manager(
            c["max_capacity"],
            c["block_size"],
            backend=backend,
            enable_prefix_caching=c.get("enable_prefix_caching", True),
            publishers=publishers_of(c),
            dp_rank=c.get("dp_rank", 0),
            quirks=quirks | (faithful("g1_kvbm") if backend == "kvbm" else frozenset()),
        )
        self.owners: set[Any] = set()
        self.before_visible: set[int] = set()
        self.res: dict[str, Any] = {}

    def block_size(self) -> int | None:
        return self.g.block_size

    def call(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        if self.g.kvbm is None:
            self.before_visible = self.g.native.pool.visible()
            self.owners |= set(self.g.native.tables)
        if "owner" in args:
            self.owners.add(args["owner"])
        return super().call(op, args)

    def observe(self) -> dict[str, Any]:
        g = self.g
        if g.kvbm is not None:
            return kvbm_views(g.kvbm)
        return self.native_views(g.native, self.owners, self.before_visible)

    def drain(self) -> list[Any]:
        return [event_view(p) for p in self.g.drain_events()]

    def process_signal(self, sig: Any) -> Any:
        return self.g.process_for_request(0, sig, 0)

    def _event(self, spec: Any) -> G1Signal:
        sigs = self.signals(spec)
        if len(sigs) != 1:
            raise Uninterpretable(f"{spec!r} is not one signal")
        return sigs[0]

    def op_process_for_request(self, a: dict[str, Any]) -> G1Acquire:
        return self.g.process_for_request(a["owner"], self._event(a["event"]), a.get("reusable_prefix_blocks", 0))

    def op_process(self, a: dict[str, Any]) -> G1Acquire:
        return self.g.process(self._event(a.get("event", a)))

    def op_finalize_computed_prefix(self, a: dict[str, Any]) -> None:
        if "sequence" in a:
            self.g.finalize_computed_prefix(
                a["owner"], a["computed_before"], a["computed_after"], self.seq(a["sequence"])
            )
        else:
            self.g.native.finalize_computed_prefix(a["owner"], a["computed_before"], a["computed_after"])

    def op_reserve_decode_blocks(self, a: dict[str, Any]) -> G1Acquire:
        r = self.g.reserve_decode_blocks(a["count"])
        if isinstance(r, G1Acquire):
            return r
        if a.get("as"):
            self.res[str(a["as"])] = r
        return Ready()

    def _res(self, name: Any) -> Any:
        if name not in self.res:
            raise Uninterpretable(f"no reservation named {name!r}")
        return self.res[name]

    def op_process_decode_signal_for_request(self, a: dict[str, Any]) -> None:
        self.g.process_decode_signal_for_request(a["owner"], self._event(a["event"]), self._res(a["reservation"]))

    def op_release_decode_reservation(self, a: dict[str, Any]) -> None:
        self.g.release_decode_reservation(self.res.pop(a["reservation"]))

    def op_reserve_destination_at(self, a: dict[str, Any]) -> dict[str, Any]:
        r = self.g.reserve_destination_at(a["owner"], self.seq(a["sequence"]), a.get("eviction_now_ms"))
        if isinstance(r, G1Acquire):
            return {"returns": r}
        if a.get("as"):
            self.res[str(a["as"])] = r
        return {"returns": Ready(), "transferable_prompt_tokens": r.transferable_prompt_tokens(self.g.block_size)}

    def op_activate_destination(self, a: dict[str, Any]) -> None:
        self.g.activate_destination(self.res.pop(a["reservation"]))

    def op_cancel_destination(self, a: dict[str, Any]) -> None:
        self.g.cancel_destination(self.res.pop(a["reservation"]))

    op_drop_reservation = op_cancel_destination

    def op_get_prefill_cost(self, a: dict[str, Any]) -> dict[str, Any]:
        cost = self.g.get_prefill_cost(self.seq(a["sequence"]))
        return {"returns": cost, **cost}

    def op_counts(self, a: dict[str, Any]) -> None:
        return None


# --------------------------------------------------------------------------- KVBM backend


def kvbm_views(m: Any) -> dict[str, Any]:
    """``kvbm_backend::KvManager``'s fields and accessors, by their Rust names."""
    sub = m.sub

    def names(plhs: list[PLH]) -> list[int]:
        return [m.registered[p].seq_hash for p in plhs if p in m.registered]

    active_full = {
        str(h): {"block_id": e.block, "logical_refs": e.refs, "handle": {"block_id": e.block}, "plh": plh_json(e.plh)}
        for h, e in sorted(m.active_full.items())
    }
    snapshot = {
        "inflight_mutable": len(sub.mutable),
        "inflight_immutable": len(sub.primaries),
        "reset_pool_size": len(sub.free),
        "inactive_pool_size": len(sub.inactive),
        "registration_dedup": sub.dedup,
        **sub.counters,
    }
    out: dict[str, Any] = {
        "num_active_blocks": m.num_active_blocks(),
        "num_active_block_refs": m.num_active_block_refs(),
        "num_inactive_blocks": m.num_inactive_blocks(),
        "max_capacity": m.max_capacity,
        "block_size": m.block_size,
        "dp_rank": m.dp_rank,
        "get_active_perc": m.num_active_blocks() / m.max_capacity,
        "next_event_id": m.next_event_id,
        "capacity_generation": m.capacity_generation,
        "available_blocks": sub.available(),
        "total_blocks": sub.total,
        "inflight_immutable": len(sub.primaries),
        "block_manager": {
            "available_blocks": sub.available(),
            "total_blocks": sub.total,
            "duplication_policy": "Reject",
            "metrics": {"snapshot": snapshot},
        },
        "active_partial": dict(sorted(m.active_partial.items())),
        "active_full": active_full,
        "active_full_refs": {h: v["logical_refs"] for h, v in active_full.items()},
        "block_ids": {h: v["block_id"] for h, v in active_full.items()},
        "registered_blocks": {
            plh_key(p): {
                "seq_hash": sh.seq_hash,
                "block_id": sh.block_id,
                "local_hash": sh.local_hash,
                "token_ids": sh.token_ids,
                "parent_hash": sh.parent_hash,
            }
            for p, sh in m.registered.items()
        },
        "inactive_present": sorted(names(sub.inactive.plhs())),
    }
    for h, e in m.active_full.items():
        out[f"block_id_of_{h}"] = e.block
    if hasattr(sub.inactive, "candidates"):
        nodes = [n for n in sub.inactive.nodes.values() if n.plh is not None]
        out["inactive_ticks_oldest_first"] = names([n.plh for n in sorted(nodes, key=lambda n: n.tick)])
        out["lineage_leaf_queue"] = names([sub.inactive.nodes[(pos, f)].plh for _, pos, f in sub.inactive.candidates()])
    return out


def _slot_list(x: Any) -> list[int]:
    if isinstance(x, dict) and "slots" in x:
        return list(x["slots"])
    if isinstance(x, list):
        return [int(v) for v in x]
    raise Uninterpretable(f"not a list of blocks: {x!r}")


_ = (PartialBlock, UniqueBlock, InvalidInput, ClassVar)

HARNESSES = (NativePoolHarness, NativeBackendHarness, G1ManagerHarness)
