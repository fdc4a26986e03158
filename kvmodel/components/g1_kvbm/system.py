"""The G1 manager with its KVBM backend on kvbm-logical (R09), driven request by request."""

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


class G1KvbmSystem(System):
    """The G1 facade with the KVBM backend (its default), driven request by request.

    Operations (trace format): ``new_request {owner, tokens, caching}`` (a sequence; ``caching``
    false gives random hashes), ``allocate {owner}`` (its creation signal), ``push {owner,
    token}`` (the Promote of a completed tail and the Use of a new partial),
    ``decode_push {owner, token}`` (the same through the outstanding decode reservation),
    ``resend {owner}`` (the request's held blocks named again in one Use: a second logical
    holder of the same table), ``free {owner}`` (one Deref of what it holds, leaf first),
    ``reserve_decode {count}`` / ``release_decode {}``, ``reserve_destination {owner, tokens}`` /
    ``activate_destination {owner}`` / ``cancel_destination {owner}``, the malformed inputs
    ``bad_use {kind: dup_partial | hash_two_plhs}`` and ``bad_deref {owner}`` (the request's
    Deref with an unknown block at the end), and ``counts {}``.

    The system keeps what each request holds (the blocks its successful signals named): a
    request's Deref names exactly those, so the manager's references can be checked against
    them.
    """

    OPS = (
        "new_request",
        "allocate",
        "push",
        "decode_push",
        "resend",
        "free",
        "reserve_decode",
        "release_decode",
        "reserve_destination",
        "activate_destination",
        "cancel_destination",
        "bad_use",
        "bad_deref",
        "counts",
    )
    DEFAULTS: ClassVar[dict[str, Any]] = {
        "max_capacity": 3,
        "block_size": 2,
        "eviction_backend": "Lineage",
        "publishers": True,
        "dp_rank": 0,
        "plh_fragments": 0,
    }
    BAD_HASH = 999_999

    def __init__(self, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None) -> None:
        from kvmodel.invariants.kvbm import KvbmMonitor
        from kvmodel.model.g1.g1_manager import G1Manager

        self.component = "g1_kvbm"
        self.config = check_config(
            self.component, config or {}, self.DEFAULTS, bounds={"max_capacity": (0, MAX_SLOTS + 1)}
        )
        self.quirks = resolve(self.component, quirks)
        c = self.config
        self.model = G1Manager(
            c["max_capacity"],
            c["block_size"],
            backend="kvbm",
            eviction_backend=c["eviction_backend"],
            publishers=c["publishers"],
            dp_rank=c["dp_rank"],
            quirks=self.quirks,
        )
        self.monitor = KvbmMonitor()
        self.seqs: dict[int, Any] = {}
        self.holdings: dict[int, list[Any]] = {}
        self.stalled: set[int] = set()
        self.decodes: list[Any] = []
        self.dest: dict[int, Any] = {}
        self.uncached: set[int] = set()

    def clone(self) -> G1KvbmSystem:
        import copy

        c = G1KvbmSystem.__new__(G1KvbmSystem)
        c.component, c.config, c.quirks = self.component, self.config, self.quirks
        c.model = self.model.clone()
        c.monitor = self.monitor.copy()
        c.seqs = {k: v.copy() for k, v in self.seqs.items()}
        c.holdings = {k: list(v) for k, v in self.holdings.items()}
        c.stalled = set(self.stalled)
        c.decodes = [copy.deepcopy(r) for r in self.decodes]
        c.dest = {k: copy.deepcopy(v) for k, v in self.dest.items()}
        c.uncached = set(self.uncached)
        return c

    ARGS: ClassVar[dict[str, A.Spec]] = {
        "new_request": {"owner": (R, A.owner), "tokens": (R, A.tokens), "caching": (O, A.boolean)},
        "allocate": {"owner": (R, A.owner)},
        "push": {"owner": (R, A.owner), "token": (R, A.u32)},
        "decode_push": {"owner": (R, A.owner), "token": (R, A.u32)},
        "resend": {"owner": (R, A.owner)},
        "free": {"owner": (R, A.owner)},
        "reserve_decode": {"count": (R, A.usize)},
        "release_decode": {},
        "reserve_destination": {"owner": (R, A.owner), "tokens": (R, A.tokens), "caching": (O, A.boolean)},
        "activate_destination": {"owner": (R, A.owner)},
        "cancel_destination": {"owner": (R, A.owner)},
        "bad_use": {"kind": (R, A.string)},
        "bad_deref": {"owner": (R, A.owner)},
        "counts": {},
    }

    def decode(self, op: str, args: Any) -> Any:
        if op not in self.OPS:
            raise InvalidInput(f"unknown g1_kvbm operation {op!r} (known: {list(self.OPS)})")
        return A.check(self.component, op, args, self.ARGS[op])

    def _seq(self, owner: Any) -> Any:
        s = self.seqs.get(owner)
        if s is None:
            raise InvalidInput(f"no request {owner!r}")
        return s

    def _new_seq(self, o: int, a: dict[str, Any]) -> Any:
        from kvmodel.model.g1.sequence import NewActiveSequence

        if o in self.seqs:
            raise InvalidInput(f"request {o} exists")
        return NewActiveSequence(
            a["tokens"],
            8,
            self.model.block_size,
            bool(a.get("caching", True)),
            name=f"r{o}",
            plh_fragments=self.config["plh_fragments"],
        )

    def _use_of(self, s: Any, blocks: list[Any]) -> Any:
        """A Use naming ``blocks`` of sequence ``s`` (their PLHs and local hashes)."""
        from kvmodel.model.blocks import FullBlock
        from kvmodel.model.g1.sequence import G1Use

        idx = {b: i for i, b in enumerate(s.unique)}
        fulls = [idx[b] for b in blocks if isinstance(b, FullBlock)]
        return G1Use(
            tuple(blocks),
            tuple(s.local_hashes[i] for i in fulls) if s.caching else (),
            tuple(s.plhs[i] for i in fulls),
            None,
            None,
            s.caching,
        )

    def _push(self, o: int, token: int, decode: bool) -> list[str]:
        from kvmodel.model.g1.sequence import G1Promote, G1Use

        g = self.model
        s = self._seq(o)
        if o not in self.holdings or not self.holdings[o] or o in self.dest or o in self.stalled:
            raise InvalidInput(f"request {o} is not decoding")
        if decode:
            if not self.decodes:
                raise InvalidInput("no decode reservation outstanding")
            if (len(s) + 1) % s.block_size == 1 and not self.decodes[0].slots:
                raise InvalidInput("the decode reservation has no slot left")
        out: list[str] = []
        for sig in s.push(token) or []:
            if decode:
                r = g.process_decode_signal_for_request(o, sig, self.decodes[0])
            else:
                r = g.process_for_request(o, sig, 0)
            out.append(r)
            held = self.holdings[o]
            if isinstance(sig, G1Promote) and isinstance(r, Ready):
                held[:] = [s.unique[i] if getattr(b, "uuid", None) == sig.uuid else b for i, b in enumerate(held)]
            elif isinstance(sig, G1Use):
                if isinstance(r, Ready):
                    held.extend(sig.blocks)
                else:
                    self.stalled.add(o)
        s.commit_allocation(len(s))
        return out

    def _call(self, op: str, a: dict[str, Any]) -> Any:
        from kvmodel.model.blocks import FullBlock, PartialBlock
        from kvmodel.model.g1.sequence import G1Deref, G1Use

        g = self.model
        bs = g.block_size
        if op == "new_request":
            o = a["owner"]
            self.seqs[o] = self._new_seq(o, a)
            self.holdings[o] = []
            return None
        if op == "allocate":
            o = a["owner"]
            s = self._seq(o)
            if self.holdings.get(o) or o in self.dest:
                raise InvalidInput(f"request {o} is already allocated")
            sig = s.prepare_allocation(len(s))
            if sig is None:
                return Ready(0)
            out = g.process_for_request(o, sig, 0)
            if isinstance(out, Ready):
                s.commit_allocation(len(s))
                self.holdings[o] = list(sig.blocks)
            return out
        if op in ("push", "decode_push"):
            return self._push(a["owner"], a["token"], op == "decode_push")
        if op == "resend":
            o = a["owner"]
            s = self._seq(o)
            held = self.holdings.get(o) or []
            if not held or o in self.dest:
                raise InvalidInput(f"request {o} holds nothing")
            sig = self._use_of(s, held)
            out = g.process_for_request(o, sig, 0)
            if isinstance(out, Ready):
                self.holdings[o] = held + list(sig.blocks)
            return out
        if op in ("free", "bad_deref"):
            o = a["owner"]
            self._seq(o)
            if o in self.dest:
                raise InvalidInput(f"request {o} is a destination reservation")
            blocks = tuple(reversed(self.holdings.get(o, [])))
            if op == "bad_deref":
                blocks += (FullBlock(self.BAD_HASH),)
            out = g.process_for_request(o, G1Deref(blocks), 0)
            del self.seqs[o]
            self.holdings.pop(o, None)
            self.stalled.discard(o)
            return out
        if op == "reserve_decode":
            if self.decodes:
                raise InvalidInput("a decode reservation is outstanding")
            r = g.reserve_decode_blocks(a["count"])
            if isinstance(r, CapacityExhausted):
                return r
            self.decodes.append(r)
            return Ready()
        if op == "release_decode":
            if not self.decodes:
                raise InvalidInput("no decode reservation outstanding")
            g.release_decode_reservation(self.decodes.pop(0))
            return None
        if op == "reserve_destination":
            o = a["owner"]
            s = self._new_seq(o, a)
            r = g.reserve_destination_at(o, s)
            if isinstance(r, CapacityExhausted):
                return r
            self.seqs[o], self.dest[o], self.holdings[o] = s, r, []
            return {"transferable_prompt_tokens": r.transferable_prompt_tokens(bs), "pinned": len(r.pinned)}
        if op in ("activate_destination", "cancel_destination"):
            o = a["owner"]
            r = self.dest.get(o)
            if r is None:
                raise InvalidInput(f"no destination reservation for request {o}")
            if op == "activate_destination":
                lay = r.layout
                g.activate_destination(r)
                s = self.seqs[o]
                s.commit_allocation(s.num_input_tokens)
                self.holdings[o] = [] if lay is None else list(lay.blocks)
            else:
                g.cancel_destination(r)
                del self.seqs[o]
                self.holdings.pop(o, None)
            del self.dest[o]
            return None
        if op == "bad_use":
            kind = a.get("kind")
            if kind == "dup_partial":
                sig = G1Use((PartialBlock("bad"), PartialBlock("bad")))
            elif kind == "hash_two_plhs":
                h = self.BAD_HASH
                sig = G1Use((FullBlock(h), FullBlock(h)), (), ((h, None, 0), (h, None, 1)))
            else:
                raise InvalidInput(f"bad_use kind must be dup_partial or hash_two_plhs, got {kind!r}")
            return g.process_for_request(-1, sig, 0)
        if op == "counts":
            return {
                "num_active_blocks": g.num_active_blocks(),
                "num_inactive_blocks": g.num_inactive_blocks(),
                "num_active_block_refs": g.num_active_block_refs(),
            }
        raise InvalidInput(f"unknown g1_kvbm operation {op!r}")

    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome:
        from kvmodel.invariants import check_all
        from kvmodel.invariants.kvbm import _parts

        m = self.model.kvbm
        pre_key = self.model.key()
        pre: dict[str, Any] = {
            "parts": _parts(m),
            "index_key": m.sub.inactive.key(),
            "inactive_before": len(m.sub.inactive),
        }
        out = Outcome(op, args_json if args_json is not None else decoded)
        seqs = dict(self.seqs)
        owner = decoded.get("owner") if isinstance(decoded, dict) else None
        if isinstance(owner, (int, str)) and owner in seqs:
            seqs[owner] = seqs[owner].copy()
        saved = (
            seqs,
            {k: list(v) for k, v in self.holdings.items()},
            set(self.stalled),
            list(self.decodes),
            dict(self.dest),
        )
        try:
            out.result = self._call(op, decoded)
        except ModelError as e:
            out.error = e
            self.seqs, self.holdings, self.stalled, self.decodes, self.dest = saved
        for s in self.seqs.values():
            if not s.caching:
                self.uncached.update(s.seq_hashes)
        marks = self.model.kvbm.drain_use_marks()
        out.events = self.model.drain_events()
        self.monitor.observe(out.events, self.uncached, marks)
        pre["holdings"] = self.holdings
        pre["uncached"] = self.uncached
        pre["dest_pins"] = Counter(plh for r in self.dest.values() if r.live for _, plh in r.pinned)
        ctx = StepContext(self.model, self.monitor, op, decoded, out.result, out.error, out.events, pre_key, pre)
        out.violations = check_all(self.component, ctx)
        out.ctx = ctx
        return out

    def snapshot(self) -> dict[str, Any]:
        snap: dict[str, Any] = self.model.snapshot()
        snap["requests"] = {
            str(o): {"tokens": len(s), "holds": [repr(b) for b in self.holdings.get(o, [])]}
            for o, s in sorted(self.seqs.items())
        }
        return snap

    def key(self) -> Any:
        reqs = tuple(
            (
                o,
                tuple(s.tokens),
                s.caching,
                s.num_allocated_tokens,
                tuple(map(repr, s.unique)),
                tuple(map(repr, self.holdings.get(o, []))),
                o in self.stalled,
            )
            for o, s in sorted(self.seqs.items())
        )
        res = (
            tuple(tuple(r.slots) for r in self.decodes),
            tuple((o, tuple(r.pinned), tuple(r.unpublished), r.live) for o, r in sorted(self.dest.items())),
        )
        return (self.model.key(), self.monitor.key(), reqs, res, tuple(sorted(self.uncached)))
