"""Invariant mode for the router's indexer (:mod:`kvmodel.invariant_mode`): the stream's ghost
(:class:`~kvmodel.invariants.router.RouterMonitor`) fed with the same operations judges each
answer; a ``dump_tree`` answer, or an observation's ``state``, shows the content (and, when the
state has ``lookup`` and ``dead_nodes``, the tree's own structure)."""

from __future__ import annotations

from typing import Any

from kvmodel.components.router.actions import ACTIONS
from kvmodel.invariant_mode import Malformed, answer
from kvmodel.invariants import StepContext
from kvmodel.invariants.router import RouterMonitor, TreeView, Triple
from kvmodel.model.router import Worker


def _u64(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**64


def content(rows: Any) -> dict[Worker, tuple[Triple, ...]]:
    """``dump_tree`` rows as the content per worker; anything else is :class:`Malformed`."""
    if not isinstance(rows, list):
        raise Malformed(f"the content must be a list of rows, got {rows!r:.120}")
    out: dict[Worker, set[Triple]] = {}
    for r in rows:
        if not (
            isinstance(r, list)
            and len(r) == 5
            and all(_u64(x) for x in (r[0], r[1], r[3], r[4]))
            and (r[2] is None or _u64(r[2]))
        ):
            raise Malformed(
                f"a content row is not [worker_id, dp_rank, parent|null, block_hash, tokens_hash]: {r!r:.120}"
            )
        out.setdefault((r[0], r[1]), set()).add((r[2], r[3], r[4]))
    return {w: tuple(sorted(v, key=lambda t: (-1 if t[0] is None else t[0], t[1], t[2]))) for w, v in out.items()}


def lookup(rows: Any) -> dict[Worker, tuple[int, ...]]:
    if not isinstance(rows, list):
        raise Malformed(f"the lookup must be a list of rows, got {rows!r:.120}")
    out: dict[Worker, list[int]] = {}
    for r in rows:
        if not (isinstance(r, list) and len(r) == 3 and all(_u64(x) for x in r)):
            raise Malformed(f"a lookup row is not [worker_id, dp_rank, block_hash]: {r!r:.120}")
        out.setdefault((r[0], r[1]), []).append(r[2])
    return {w: tuple(sorted(v)) for w, v in out.items()}


def state_view(state: Any) -> TreeView:
    """An observation's ``state`` (docs/contracts.md) as the invariants' view."""
    if not isinstance(state, dict) or "content" not in state or set(state) - {"content", "lookup", "dead_nodes"}:
        raise Malformed(f"the state is not {{content, lookup?, dead_nodes?}}: {state!r:.160}")
    dead = state.get("dead_nodes")
    if dead is not None and not _u64(dead):
        raise Malformed(f"dead_nodes must be a count, got {dead!r:.60}")
    return TreeView(content(state["content"]), lookup(state["lookup"]) if "lookup" in state else None, dead)


class RouterObserver:
    readable = frozenset({"events", "dump", "tree"})

    def __init__(self, config: dict[str, Any]) -> None:
        self.monitor = RouterMonitor()
        self.provides = frozenset({"events"})
        self.tree = True  # every state so far has shown the lookup tables and the dead nodes

    def step(self, op: str, args: Any, observation: dict[str, Any]) -> StepContext:
        action = ACTIONS.decode(op, {} if args is None else args)
        error, result, _ = answer(observation)
        self.monitor.observe(op, action, result, None if error is None else error.id)
        v: TreeView | None = None
        if "state" in observation:
            v = state_view(observation["state"])
            self.tree = self.tree and v.lookup is not None and v.dead is not None
        elif op == "dump_tree" and error is None:
            v = TreeView(content(result))
        else:
            self.tree = False
        provides = {"events"}
        if v is not None:
            provides.add("dump")
            if self.tree and v.lookup is not None:
                provides.add("tree")
        self.provides = frozenset(provides)
        return StepContext(v, self.monitor, op, action, result, error, [], None, None)
