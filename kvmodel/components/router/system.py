"""The router indexer's system: the ideal index, or a revision's radix tree, with the stream's
ghost (:class:`~kvmodel.invariants.router.RouterMonitor`) behind the step interface."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kvmodel.actions import Action, ActionSystem
from kvmodel.components.router.actions import ACTIONS, NAME, content_rows
from kvmodel.invariants.router import RouterMonitor
from kvmodel.model.quirks import resolve
from kvmodel.model.router import CompressedRadixTree, RadixTree, RouterIndex, dead_nodes, lookup_hashes, tree_for
from kvmodel.systems import Outcome, check_config


def tree_key(tree: Any) -> Any:
    """A canonical key of an indexer's state: node ids renamed in the order a walk from the root
    (children by tokens hash), then the lookup tables (by worker and hash), first meets them, so
    trees that differ only in their allocation order or their garbage have one key."""
    if isinstance(tree, RouterIndex):
        return tuple(
            (w, tuple(sorted(((h, -1 if p is None else p, t) for h, (p, t) in table.items()))))
            for w, table in sorted(tree.lookup.items())
        )
    nodes = tree.nodes
    ids: dict[int, int] = {0: 0}
    order = [0]
    i = 0

    def visit(n: int) -> None:
        if n not in ids:
            ids[n] = len(order)
            order.append(n)

    roots = [n for _, t in sorted(tree.lookup.items()) for _, n in sorted(t.items())]
    while True:
        while i < len(order):
            for _, c in sorted(nodes[order[i]].children.items()):
                visit(c)
            i += 1
        pending = [n for n in roots if n not in ids]
        if not pending:
            break
        visit(pending[0])
    body: list[tuple[Any, ...]] = []
    for n in order:
        x = nodes[n]
        kids = tuple((t, ids[c]) for t, c in sorted(x.children.items()))
        if isinstance(tree, RadixTree):
            body.append((x.tokens_hash, x.block_hash, tuple(sorted(x.workers)), kids))
        else:
            body.append(
                (
                    tuple(x.edge),
                    tuple(sorted(x.full)),
                    tuple(sorted(x.cut.items())),
                    x.internal,
                    tuple(sorted(x.pos.items())),
                    kids,
                )
            )
    look = tuple((w, tuple((h, ids[n]) for h, n in sorted(t.items()))) for w, t in sorted(tree.lookup.items()))
    return (tuple(body), look)


class RouterSystem(ActionSystem):
    """The indexer a quirk set names (:func:`kvmodel.model.router.tree_for`: the compressed tree of
    1.6.1, the per-block tree of 4276866, or the ideal index) and the stream's ghost. An event's
    rejection is a ``Result::Err`` the caller handles and goes on from (the errors' ``returned``):
    a Removed that names an unknown hash still removes the known ones."""

    ACTIONS = ACTIONS
    component = NAME

    def __init__(self, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None) -> None:
        self.config = check_config(NAME, config or {}, {})
        self.quirks = resolve(NAME, quirks)
        self.model = tree_for(self.quirks)
        self.monitor = RouterMonitor()

    def observe(self, action: Action, out: Outcome) -> list[Any]:
        err = None if out.error is None else str(getattr(out.error, "id", out.error))
        self.monitor.observe(action.op, action, out.result, err)
        return []

    def key(self) -> Any:
        return (tree_key(self.model), self.monitor.key())

    def clone(self) -> RouterSystem:
        c = RouterSystem.__new__(RouterSystem)
        c.config, c.quirks = self.config, self.quirks
        c.model = self.model.clone()
        c.monitor = self.monitor.copy()
        return c

    def snapshot(self) -> dict[str, Any]:
        """The state in invariant mode's shape (docs/contracts.md): ``content`` (the ``dump_tree``
        rows), ``lookup`` (``[worker_id, dp_rank, block_hash]`` rows of every lookup table) and
        ``dead_nodes``."""
        return {
            "content": content_rows(self.model.content()),
            "lookup": [[w, r, h] for (w, r), hs in lookup_hashes(self.model).items() for h in hs],
            "dead_nodes": dead_nodes(self.model),
        }

    def node_count(self) -> int:
        """What the explorer's world bounds: the nodes the per-block tree has allocated, the blocks
        on all edges the compressed tree has allocated (an append grows an edge in place)."""
        m = self.model
        if isinstance(m, RadixTree):
            return len(m.nodes) - 1
        if isinstance(m, CompressedRadixTree):
            return sum(len(n.edge) for n in m.nodes)
        return 0
