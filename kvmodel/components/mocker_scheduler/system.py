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

from kvmodel.actions import Action
from kvmodel.components.mocker_scheduler import NAME
from kvmodel.components.mocker_scheduler.actions import ACTIONS, Transition
from kvmodel.components.mocker_scheduler.actions import Stalled as Stalled  # re-exported
from kvmodel.invariants import Violation
from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.model.g1.vllm_block_pool import MAX_SLOTS
from kvmodel.model.quirks import resolve
from kvmodel.systems import Outcome, System, check_config


class SchedulerSystem(System):
    """See the module docstring."""

    ACTIONS = ACTIONS
    OPS = ACTIONS.ops
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
        return ACTIONS.decode(op, args)

    def transitions(self, events: Iterable[Any]) -> list[Transition]:
        """The pool's KV events as per-hash transitions (a Stored batch block by block, each
        block's parent the one before it)."""
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
        action = decoded if isinstance(decoded, Action) else self.decode(op, decoded)
        if action.op != op:
            raise InvalidInput(f"{self.component}: a {action.op} action applied as {op!r}")
        out = Outcome(op, args_json if args_json is not None else action.to_json())
        evs: list[Transition] = []
        self.step_transitions = evs
        try:
            out.result = action.run(self)
        except ModelError as e:
            out.error = e.with_traceback(None)  # no frame held: no cycle left for the collector
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
