"""The G1 manager with its native (vLLM-style) backend (seed 002), driven request by request."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, ClassVar

from kvmodel import argspec as A
from kvmodel.argspec import OPTIONAL as O
from kvmodel.argspec import REQUIRED as R
from kvmodel.invariants import StepContext
from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.model.g1.acquire import CapacityExhausted, Ready
from kvmodel.model.g1.vllm_block_pool import MAX_SLOTS
from kvmodel.model.quirks import resolve
from kvmodel.systems import Outcome, System, check_config


class G1System(System):
    """The G1 facade with the native backend, driven request by request.

    Operations (trace format): ``new_request {owner, tokens}`` (a sequence, no signal yet),
    ``allocate {owner, reuse}`` (the creation signal; with ``reuse`` its cached full-block
    prefix is authorised, capped like the scheduler's hit at ``(n-1)//block_size`` blocks),
    ``push {owner, token}`` (the sequence's Promote and Use of a new partial),
    ``finalize {owner}`` (everything computed: ``finalize_computed_prefix(computed, len)``),
    ``free {owner}`` (the terminal Deref, leaf first), ``deref_in_order {owner}`` (the same
    blocks in table order), ``reserve_decode {count}`` / ``release_decode {}``,
    ``reserve_destination {owner, tokens}`` / ``activate_destination {owner}`` /
    ``cancel_destination {owner}``, and ``counts {}``.
    """

    OPS = (
        "new_request",
        "allocate",
        "push",
        "finalize",
        "free",
        "deref_in_order",
        "reserve_decode",
        "release_decode",
        "reserve_destination",
        "activate_destination",
        "cancel_destination",
        "counts",
    )
    DEFAULTS: ClassVar[dict[str, Any]] = {
        "max_capacity": 4,
        "block_size": 2,
        "enable_prefix_caching": True,
        "publishers": True,
        "dp_rank": 0,
    }

    def __init__(self, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None) -> None:
        from kvmodel.invariants.g1 import G1Monitor
        from kvmodel.model.g1.g1_manager import G1Manager

        self.component = "g1_native"
        self.config = check_config(
            self.component, config or {}, self.DEFAULTS, bounds={"max_capacity": (0, MAX_SLOTS + 1)}
        )
        self.quirks = resolve(self.component, quirks)
        c = self.config
        self.model = G1Manager(
            c["max_capacity"],
            c["block_size"],
            backend="native",
            enable_prefix_caching=c["enable_prefix_caching"],
            publishers=c["publishers"],
            dp_rank=c["dp_rank"],
            quirks=self.quirks,
        )
        self.monitor = G1Monitor()
        self.seqs: dict[int, Any] = {}
        self.computed: dict[int, int] = {}
        self.decodes: list[Any] = []
        self.dest: dict[int, Any] = {}

    def clone(self) -> G1System:
        import copy

        c = G1System.__new__(G1System)
        c.component, c.config, c.quirks = self.component, self.config, self.quirks
        c.model = self.model.clone()
        c.monitor = self.monitor.copy()
        c.seqs = {k: v.copy() for k, v in self.seqs.items()}
        c.computed = dict(self.computed)
        # reservations point into the pool's bookkeeping only by value: copy them
        c.decodes = [copy.deepcopy(r) for r in self.decodes]
        c.dest = {k: copy.deepcopy(v) for k, v in self.dest.items()}
        return c

    ARGS: ClassVar[dict[str, A.Spec]] = {
        "new_request": {"owner": (R, A.owner), "tokens": (R, A.tokens)},
        "allocate": {"owner": (R, A.owner), "reuse": (O, A.boolean)},
        "push": {"owner": (R, A.owner), "token": (R, A.u32)},
        "finalize": {"owner": (R, A.owner)},
        "free": {"owner": (R, A.owner)},
        "deref_in_order": {"owner": (R, A.owner)},
        "reserve_decode": {"count": (R, A.usize)},
        "release_decode": {},
        "reserve_destination": {"owner": (R, A.owner), "tokens": (R, A.tokens)},
        "activate_destination": {"owner": (R, A.owner)},
        "cancel_destination": {"owner": (R, A.owner)},
        "counts": {},
    }

    def decode(self, op: str, args: Any) -> Any:
        if op not in self.OPS:
            raise InvalidInput(f"unknown g1_native operation {op!r} (known: {list(self.OPS)})")
        return A.check(self.component, op, args, self.ARGS[op])

    def _seq(self, owner: Any) -> Any:
        s = self.seqs.get(owner)
        if s is None:
            raise InvalidInput(f"no request {owner!r}")
        return s

    def _live(self, owner: Any) -> Any:
        """The request's sequence, if it is not a destination reservation still in transfer."""
        s = self._seq(owner)
        if owner in self.dest:
            raise InvalidInput(f"request {owner} is a destination reservation (activate or cancel it)")
        return s

    def _outstanding(self) -> int:
        return int(sum(r.pool.fresh for r in self.decodes) + sum(r.pool.fresh for r in self.dest.values()))

    def _call(self, op: str, a: dict[str, Any]) -> Any:
        from kvmodel.model.g1.sequence import G1Deref, NewActiveSequence

        g = self.model
        bs = g.block_size
        if op == "new_request":
            o = a["owner"]
            if o in self.seqs:
                raise InvalidInput(f"request {o} exists")
            self.seqs[o] = NewActiveSequence(a["tokens"], 8, bs, self.config["enable_prefix_caching"], name=f"r{o}")
            self.computed[o] = 0
            return None
        if op == "allocate":
            o = a["owner"]
            s = self._live(o)
            sig = s.prepare_allocation(len(s))
            if sig is None:
                return Ready(0)
            reusable = 0
            if a.get("reuse") and s.num_allocated_tokens == 0 and o not in g.native.tables:
                cap = (len(s) - 1) // bs
                for b in sig.blocks[:cap]:
                    if getattr(b, "hash", None) is None or g.native.prefix_hit(b.hash) is None:
                        break
                    reusable += 1
            self._pre["reusable"] = reusable
            out = g.process_for_request(o, sig, reusable)
            if isinstance(out, Ready):
                s.commit_allocation(len(s))
                self.computed[o] = max(self.computed[o], reusable * bs)
            return out
        if op == "push":
            o = a["owner"]
            s = self._live(o)
            if o not in g.native.tables:
                # out of protocol: the scheduler decodes only admitted (allocated) requests
                raise InvalidInput(f"request {o} is not allocated, so it does not decode")
            sigs = s.push(a["token"]) or []
            return [g.process_for_request(o, x, 0) for x in sigs]
        if op == "finalize":
            o = a["owner"]
            s = self._live(o)
            before, after = self.computed.get(o, 0), len(s)
            g.finalize_computed_prefix(o, before, after, s)
            self.computed[o] = after
            return None
        if op in ("free", "deref_in_order"):
            o = a["owner"]
            s = self._live(o)
            sig = s.terminal_signal()
            if op == "deref_in_order":
                if o not in g.native.tables:
                    raise InvalidInput(f"request {o} holds no blocks to name in table order")
                sig = G1Deref(tuple(reversed(sig.blocks)))
                t = g.native.tables.get(o, [])
                self._pre["deref_names_tail"] = len(t) == len(sig.blocks) and all(
                    any(e.matches(b) for e in t) for b in sig.blocks
                )
            out = g.process_for_request(o, sig, 0)
            del self.seqs[o]
            self.computed.pop(o, None)
            return out
        if op == "reserve_decode":
            r = g.reserve_decode_blocks(a["count"])
            if isinstance(r, CapacityExhausted):
                return r
            self.decodes.append(r)
            return Ready()
        if op == "release_decode":
            if not self.decodes:
                raise InvalidInput("no decode reservation outstanding")
            g.release_decode_reservation(self.decodes[0])
            self.decodes.pop(0)
            return None
        if op == "reserve_destination":
            o = a["owner"]
            if o in self.seqs:
                raise InvalidInput(f"request {o} exists")
            s = NewActiveSequence(a["tokens"], 8, bs, self.config["enable_prefix_caching"], name=f"r{o}")
            r = g.reserve_destination_at(o, s)
            if isinstance(r, CapacityExhausted):
                return r
            self.seqs[o], self.computed[o], self.dest[o] = s, 0, r
            cached = len(r.pool.prefix) * bs
            return {
                "transferable_prompt_tokens": r.transferable_prompt_tokens(bs),
                "uncached_prompt_tokens": max(0, s.num_input_tokens - cached),
            }
        if op in ("activate_destination", "cancel_destination"):
            o = a["owner"]
            r = self.dest.get(o)
            if r is None:
                raise InvalidInput(f"no destination reservation for request {o}")
            if op == "activate_destination":
                g.activate_destination(r)
                s = self.seqs[o]
                s.commit_allocation(s.num_input_tokens)
                self.computed[o] = s.num_input_tokens
            else:
                g.cancel_destination(r)
                del self.seqs[o]
                self.computed.pop(o, None)
            del self.dest[o]
            return None
        if op == "counts":
            return {
                "num_active_blocks": g.num_active_blocks(),
                "num_inactive_blocks": g.num_inactive_blocks(),
                "num_active_block_refs": g.num_active_block_refs(),
            }
        raise InvalidInput(f"unknown g1_native operation {op!r}")

    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome:
        from kvmodel.invariants import check_all

        pre_key = self.model.key()
        self._pre: dict[str, Any] = {"owners": set(self.model.native.tables)}
        out = Outcome(op, args_json if args_json is not None else decoded)
        # A rejected operation leaves the request bookkeeping as it was: the operated request's
        # sequence is copied, since a signal's sequence-side change (a promoted tail, a pushed
        # token) precedes the rejection.
        seqs = dict(self.seqs)
        owner = decoded.get("owner") if isinstance(decoded, dict) else None
        if isinstance(owner, (int, str)) and owner in seqs:
            seqs[owner] = seqs[owner].copy()
        saved = (seqs, dict(self.computed), list(self.decodes), dict(self.dest))
        try:
            out.result = self._call(op, decoded)
        except ModelError as e:
            out.error = e
            self.seqs, self.computed, self.decodes, self.dest = saved
        out.events = self.model.drain_events()
        self.monitor.observe(out.events)
        self._pre["outstanding_fresh"] = self._outstanding()
        self._pre["dest_pins"] = Counter(i for r in self.dest.values() for _, i in r.pool.prefix)
        self._pre["dest_prefix"] = {o: len(r.pool.prefix) for o, r in self.dest.items()}
        self._pre["seqs"] = self.seqs
        self._pre["computed"] = self.computed
        ctx = StepContext(self.model, self.monitor, op, decoded, out.result, out.error, out.events, pre_key, self._pre)
        out.violations = check_all(self.component, ctx)
        out.ctx = ctx
        return out

    def snapshot(self) -> dict[str, Any]:
        snap: dict[str, Any] = self.model.snapshot()
        snap["requests"] = {
            str(o): {"tokens": len(s), "allocated": s.num_allocated_tokens, "computed": self.computed.get(o, 0)}
            for o, s in sorted(self.seqs.items())
        }
        return snap

    def key(self) -> Any:
        reqs = tuple(
            (o, tuple(s.tokens), s.num_allocated_tokens, self.computed.get(o, 0), tuple(map(repr, s.unique)))
            for o, s in sorted(self.seqs.items())
        )
        res = (
            tuple((len(r.pool.prefix), r.pool.fresh) for r in self.decodes),
            tuple((o, tuple(h for h, _ in r.pool.prefix), r.pool.fresh) for o, r in sorted(self.dest.items())),
        )
        return (self.model.key(), self.monitor.key(), reqs, res)
