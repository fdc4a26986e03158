"""The mocker's vLLM scheduler over the native pool, stepped one engine step at a time.

This is the system ``kvmodel conform --target vllm-engine`` drives beside vLLM's real engine, and
the one a failing engine schedule's trace replays on (``kvmodel replay`` / ``kvmodel show``). The
scheduler is :class:`kvmodel.conformance.mocker.VllmScheduler` (``crates/core/src/engine/
scheduler/vllm/core.rs`` in aisimulate, which ``ai-dynamo-runtime==1.6.1`` links, over
``lib/mocker/src/cache/vllm_block_pool.rs``). The operations are what the engine harness does to
vLLM, in the order it does them:

* ``add_request {request, prompt, max_tokens, output}`` — a request arrives (vLLM's
  ``add_request``); ``output`` holds the tokens the engine samples for it (the model does not
  sample: it is fed vLLM's tokens, so that the blocks holding generated tokens hash alike). An
  id already used is an ``InvalidInput`` (vLLM refuses a duplicate request id).
* ``abort {request}`` — vLLM's ``abort_request``: a live request leaves the running or waiting
  queue and releases its blocks leaf first, as a finish does. Returns whether a live request was
  aborted (vLLM ignores an unknown or finished id).
* ``reset_prefix_cache {}`` — vLLM's ``reset_prefix_cache``: it succeeds only when no block is in
  use, then every cached copy is dropped; returns whether it did. The mocker has no such call,
  so this is vLLM's definition; like vLLM, each success's ``AllBlocksCleared`` is published with
  the next step's events (vLLM's scheduler takes the pool's queued events once per step).
* ``step {}`` — one engine pass; returns the requests that finished in it (sampled their last
  token, or were rejected as larger than the pool). A pass that changes nothing while requests
  remain is the mocker engine's "effect-free zero-duration pass" (the replay aborts): an error.

Events are per-hash visibility transitions, the form in which the model's stream and vLLM's
(which publishes per physical copy) can be compared: ``{"Stored": {"blocks": [h], "parent_hash":
p}}`` when a hash becomes visible, ``{"Removed": {"blocks": [h]}}`` when it stops being visible,
``{"Cleared": {"blocks": []}}`` when every cache is emptied. Hashes are the model's sequence
hashes (``kvmodel.model.hashing``); vLLM's are renamed into them through the tokens.

Invariants, on the model's own stream: ``stored_once`` (a hash is not stored while visible),
``parent_before_child`` (a stored block's parent is visible, or it is a root) and
``removed_only_visible`` (only a visible hash is removed).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any, ClassVar

import attrs

from kvmodel import argspec as A
from kvmodel.argspec import OPTIONAL as O
from kvmodel.argspec import REQUIRED as R
from kvmodel.invariants import Violation
from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.model.g1.vllm_block_pool import MAX_SLOTS
from kvmodel.model.quirks import resolve
from kvmodel.systems import Outcome, System, check_config

NAME = "mocker_vllm_scheduler"


class Stalled(ModelError):
    """A pass that changed nothing while requests remain: the mocker engine's "effect-free
    zero-duration pass", on which its replay aborts (aisimulate ``core.rs``)."""

    id = "effect-free zero-duration pass"


@attrs.frozen
class Transition:
    """One per-hash visibility transition: ``kind`` is Stored, Removed or Cleared."""

    kind: str
    block: Any = None
    parent: Any = None

    def to_json(self) -> dict[str, Any]:
        if self.kind == "Stored":
            return {"Stored": {"blocks": [self.block], "parent_hash": self.parent}}
        if self.kind == "Removed":
            return {"Removed": {"blocks": [self.block]}}
        return {"Cleared": {"blocks": []}}


def _max_tokens(v: Any, what: str) -> int:
    n = A.usize(v, what)
    if not 1 <= n <= A.MAX_TOKENS:
        raise InvalidInput(f"{what} must be an integer in [1, {A.MAX_TOKENS}], got {v!r:.60}")
    return n


class SchedulerSystem(System):
    """See the module docstring."""

    OPS = ("add_request", "abort", "reset_prefix_cache", "step")
    DEFAULTS: ClassVar[dict[str, Any]] = {
        "block_size": 32,
        "capacity": 11,
        "max_num_batched_tokens": 64,
        "max_num_seqs": 4,
    }
    BOUNDS: ClassVar[dict[str, tuple[int, int]]] = {
        "block_size": (1, 4097),
        "capacity": (1, MAX_SLOTS + 1),
        "max_num_batched_tokens": (1, 2**20),
        "max_num_seqs": (1, 4097),
    }
    ARGS: ClassVar[dict[str, A.Spec]] = {
        "add_request": {
            "request": (R, A.owner),
            "prompt": (R, A.tokens),
            "max_tokens": (R, _max_tokens),
            "output": (O, A.tokens),
        },
        "abort": {"request": (R, A.owner)},
        "reset_prefix_cache": {},
        "step": {},
    }

    def __init__(self, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None) -> None:
        from kvmodel.conformance.mocker import VllmScheduler

        self.component = NAME
        self.config = check_config(self.component, config or {}, self.DEFAULTS, bounds=self.BOUNDS)
        self.quirks = resolve(self.component, quirks)
        c = self.config
        self.model = VllmScheduler(c["block_size"], c["capacity"], c["max_num_batched_tokens"], c["max_num_seqs"])
        self.monitor: dict[Any, Any] = {}  # visible hash -> its parent, from the model's own stream
        self.ids: dict[int, Any] = {}  # request id -> the scheduler's request
        self.cleared = 0  # AllBlocksCleared events waiting for the next step's (one per reset)

    def clone(self) -> SchedulerSystem:
        c = SchedulerSystem.__new__(SchedulerSystem)
        c.component, c.config, c.quirks = self.component, self.config, self.quirks
        memo: dict[int, Any] = {}
        c.model = copy.deepcopy(self.model, memo)
        c.ids = {k: copy.deepcopy(v, memo) for k, v in self.ids.items()}  # the same request objects
        c.monitor, c.cleared = dict(self.monitor), self.cleared
        return c

    def decode(self, op: str, args: Any) -> Any:
        if op not in self.OPS:
            raise InvalidInput(f"unknown {self.component} operation {op!r} (known: {list(self.OPS)})")
        a = A.check(self.component, op, args, self.ARGS[op])
        if op == "add_request":
            if not a["prompt"]:
                raise InvalidInput(f"{self.component} add_request: prompt must not be empty")
            if len(a.get("output", ())) > a["max_tokens"]:
                raise InvalidInput(f"{self.component} add_request: output holds more than max_tokens tokens")
        return a

    def _live(self, r: Any) -> bool:
        return r is not None and r.index not in self.model.finished

    def op_add_request(self, a: dict[str, Any], out: list[Transition]) -> None:
        m = self.model
        rid = a["request"]
        if rid in self.ids:
            raise InvalidInput(f"request {rid} exists")
        m.submit(a["prompt"], a.get("output", []), a["max_tokens"])
        self.ids[rid] = m.requests[-1]

    def op_abort(self, a: dict[str, Any], out: list[Transition]) -> bool:
        m = self.model
        r = self.ids.get(a["request"])
        if r is None or not self._live(r):
            return False
        mark = len(m.events)
        if r in m.running:
            m.running.remove(r)
            m._release(r)
        elif r in m.waiting:
            m.waiting.remove(r)
        m.finished.add(r.index)
        out += self._transitions(m.events[mark:])
        return True

    def op_reset_prefix_cache(self, a: dict[str, Any], out: list[Transition]) -> bool:
        from kvmodel.model.g1.vllm_block_pool import NativePool

        m = self.model
        p = m.pool
        if len(p.copies) != len(p.inactive) or p.reserved != 0:
            return False
        m.pool = NativePool(p.capacity, quirks=p.quirks)
        self.cleared += 1
        return True

    def op_step(self, a: dict[str, Any], out: list[Transition]) -> list[Any]:
        m = self.model
        out += [Transition("Cleared")] * self.cleared
        self.cleared = 0
        mark, before = len(m.events), set(m.finished)
        live = len(m.finished) < len(m.requests)
        m._effects = 0
        m.step()
        out += self._transitions(m.events[mark:])
        if live and m._effects == 0:
            raise Stalled(f"{len(m.requests) - len(m.finished)} request(s) remain")
        back = {r.index: k for k, r in self.ids.items()}
        return sorted(back[i] for i in m.finished - before)

    def _transitions(self, events: Iterable[Any]) -> list[Transition]:
        out: list[Transition] = []
        for e in events:
            d = e.to_json()["data"]
            if "stored" in d:
                parent = d["stored"]["parent_hash"]
                for b in d["stored"]["blocks"]:
                    out.append(Transition("Stored", b["block_hash"], parent))
                    parent = b["block_hash"]
            elif "removed" in d:
                out += [Transition("Removed", h) for h in d["removed"]["block_hashes"]]
        return out

    def apply(self, op: str, decoded: Any, args_json: Any = None) -> Outcome:
        out = Outcome(op, args_json if args_json is not None else decoded)
        evs: list[Transition] = []
        try:
            out.result = getattr(self, f"op_{op}")(decoded, evs)
        except ModelError as e:
            out.error = e
        out.events = list(evs)
        out.violations = self._observe(evs)
        return out

    def _observe(self, evs: list[Transition]) -> list[Violation]:
        bad: list[Violation] = []
        vis = self.monitor
        for t in evs:
            if t.kind == "Cleared":
                vis.clear()
            elif t.kind == "Stored":
                if t.block in vis:
                    bad.append(Violation("stored_once", f"hash {t.block} stored while visible"))
                if t.parent is not None and t.parent not in vis:
                    bad.append(Violation("parent_before_child", f"hash {t.block} stored before its parent {t.parent}"))
                vis[t.block] = t.parent
            else:
                if t.block not in vis:
                    bad.append(Violation("removed_only_visible", f"hash {t.block} removed while not visible"))
                vis.pop(t.block, None)
        return bad

    def snapshot(self) -> dict[str, Any]:
        m = self.model
        back = {r.index: k for k, r in self.ids.items()}
        return {
            "running": [back[r.index] for r in m.running],
            "waiting": [back[r.index] for r in m.waiting],
            "finished": sorted(back[i] for i in m.finished),
            "visible": sorted(self.monitor, key=str),
            "num_active_blocks": m.pool.num_active(),
            "num_inactive_blocks": m.pool.num_inactive(),
        }

    def key(self) -> Any:
        m = self.model
        reqs = tuple(
            (k, r.generated, r.computed, r.allocated, tuple(r.copies), r.status) for k, r in sorted(self.ids.items())
        )
        return (
            reqs,
            tuple(r.index for r in m.running),
            tuple(r.index for r in m.waiting),
            tuple(sorted(m.finished)),
            repr(m.pool.snapshot()),
            tuple(sorted(self.monitor.items(), key=str)),
            self.cleared,
        )
