"""The scheduler system's operations as typed actions (issue 22): one class per operation, each
with its trace-format arguments, their checks and what it does to the scheduler system.

What each does is what the engine harness does to vLLM (``kvmodel/components/mocker_scheduler/
system.py``'s docstring); the scheduler is the mocker's (aisimulate
``crates/core/src/engine/scheduler/vllm/core.rs``, linked by ``ai-dynamo-runtime==1.6.1``, over
``lib/mocker/src/cache/vllm_block_pool.rs``). An action's :meth:`SchedulerAction.perform` runs it
on the system and appends the step's per-hash transitions to ``out``; a rejection is the
model's error (``InvalidInput`` for a request id used twice, ``Stalled`` for an engine pass that
changes nothing while requests remain).
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import attrs

from kvmodel import argspec as A
from kvmodel.actions import ABSENT, Action, Actions
from kvmodel.argspec import OPTIONAL as O
from kvmodel.argspec import REQUIRED as R
from kvmodel.components.mocker_scheduler import NAME
from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.model.g1.vllm_block_pool import NativePool


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


class Stalled(ModelError):
    """A pass that changed nothing while requests remain: the mocker engine's "effect-free
    zero-duration pass", on which its replay aborts (aisimulate ``core.rs``)."""

    id = "effect-free zero-duration pass"


def _max_tokens(v: Any, what: str) -> int:
    n = A.usize(v, what)
    if not 1 <= n <= A.MAX_TOKENS:
        raise InvalidInput(f"{what} must be an integer in [1, {A.MAX_TOKENS}], got {v!r:.60}")
    return n


class SchedulerAction(Action, abc.ABC):
    """What every scheduler action shares: it runs on the system (the scheduler and the
    request bookkeeping beside it), not on the bare scheduler, appending its transitions to
    the system's ``step_transitions``."""


@attrs.frozen
class AddRequest(SchedulerAction):
    """vLLM's ``add_request``: a request arrives with its prompt, its ``max_tokens`` and
    (optionally) the tokens the engine samples for it. A non-empty prompt and no more sampled
    tokens than ``max_tokens`` are checked on decoding; an id used before is an
    ``InvalidInput`` (vLLM refuses a duplicate request id)."""

    op = "add_request"
    ARGS: ClassVar[A.Spec] = {
        "request": (R, A.owner),
        "prompt": (R, A.tokens),
        "max_tokens": (R, _max_tokens),
        "output": (O, A.tokens),
    }
    request: int
    prompt: list[int]
    max_tokens: int
    output: Any = ABSENT

    @classmethod
    def from_json(cls, where: str, args: Any) -> Action:
        a = A.check(where, args, cls.ARGS)
        if not a["prompt"]:
            raise InvalidInput(f"{where}: prompt must not be empty")
        if len(a.get("output", ())) > a["max_tokens"]:
            raise InvalidInput(f"{where}: output holds more than max_tokens tokens")
        return cls(a["request"], a["prompt"], a["max_tokens"], a.get("output", ABSENT))

    def to_json(self) -> dict[str, Any]:
        out = attrs.asdict(self, recurse=False)
        if self.output is ABSENT:
            del out["output"]
        return out

    def run(self, system: Any) -> None:
        if self.request in system.ids:
            raise InvalidInput(f"request {self.request} exists")
        m = system.model
        m.submit(self.prompt, [] if self.output is ABSENT else self.output, self.max_tokens)
        system.ids[self.request] = m.requests[-1]


@attrs.frozen
class Abort(SchedulerAction):
    """vLLM's ``abort_request``: a live request leaves the running or waiting queue, releasing
    its blocks leaf first as a finish does; whether a live request was aborted (an unknown or
    finished id is ignored)."""

    op = "abort"
    ARGS: ClassVar[A.Spec] = {"request": (R, A.owner)}
    request: int

    def run(self, system: Any) -> bool:
        m = system.model
        r = system.ids.get(self.request)
        if r is None or r.index in m.finished:
            return False
        mark = len(m.events)
        if r in m.running:
            m.running.remove(r)
            m._release(r)
        elif r in m.waiting:
            m.waiting.remove(r)
        m.finished.add(r.index)
        system.step_transitions += system.transitions(m.events[mark:])
        return True


@attrs.frozen
class ResetPrefixCache(SchedulerAction):
    """vLLM's ``reset_prefix_cache``: only when no block is in use, every cached copy is
    dropped; whether it was. Its ``AllBlocksCleared`` comes with the next step's events."""

    op = "reset_prefix_cache"

    def run(self, system: Any) -> bool:
        m = system.model
        p = m.pool
        if len(p.copies) != len(p.inactive) or p.reserved != 0:
            return False
        m.pool = NativePool(p.capacity, quirks=p.quirks)
        system.cleared += 1
        return True


@attrs.frozen
class Step(SchedulerAction):
    """One engine pass: the requests that finished in it (sampled their last token, or were
    rejected as larger than the pool), after the pending ``Cleared`` transitions and the pass's
    own; a pass that changes nothing while requests remain is ``Stalled``."""

    op = "step"

    def run(self, system: Any) -> list[Any]:
        m = system.model
        system.step_transitions += [Transition("Cleared")] * system.cleared
        system.cleared = 0
        mark, before = len(m.events), set(m.finished)
        live = len(m.finished) < len(m.requests)
        m._effects = 0
        m.step()
        system.step_transitions += system.transitions(m.events[mark:])
        if live and m._effects == 0:
            raise Stalled(f"{len(m.requests) - len(m.finished)} request(s) remain")
        back = {r.index: k for k, r in system.ids.items()}
        return sorted(back[i] for i in m.finished - before)


ACTIONS = Actions(NAME, (AddRequest, Abort, ResetPrefixCache, Step))
