"""The ``kv_router_radix_tree`` harness: the per-block ``RadixTree`` of commit 4276866 (the
revision the unit tests come from).

Operations: ``apply_event {worker_id, dp_rank?, event_id?, Stored | Removed | Cleared}`` (returns
``Ok`` or ``Err(ParentBlockNotFound | BlockNotFound | InvalidBlockSequence)``), ``find_matches
{local_hashes, early_exit?}`` (``scores``: worker id → score; ``score_keys``),
``remove_worker {worker_id}``, ``clear_all_blocks {worker_id}``. Observations: ``lookup``
(worker id → block hash → node ``{workers, children}``, rank 0), ``lookup_len``,
``lookup_size`` (worker id → entries), ``root`` and ``node(t)`` (a root child by tokens hash)
as ``{workers, children}`` counts, ``lookup_has_empty_entry_for_worker_<w>``, and ``tree`` (every
node, for ``tree_unchanged``).
"""

from __future__ import annotations

from typing import Any

from kvmodel.model.errors import ModelError
from kvmodel.model.events import event_from_json
from kvmodel.model.router import RadixTree
from kvmodel.vectors.harness import Harness
from kvmodel.vectors.notation import Uninterpretable


def _event(args: dict[str, Any]) -> Any:
    data: Any
    if "Stored" in args:
        data = {"stored": args["Stored"]}
    elif "Removed" in args:
        data = {"removed": args["Removed"]}
    elif "Cleared" in args or args.get("data") == "cleared":
        data = "cleared"
    else:
        raise Uninterpretable(f"no Stored / Removed / Cleared in {sorted(args)}")
    return event_from_json({"event_id": args.get("event_id", 0), "data": data, "dp_rank": args.get("dp_rank", 0)})


class RadixTreeHarness(Harness):
    component = "kv_router_radix_tree"
    model_component = "kv_router_radix_tree"

    def __init__(self, vector: dict[str, Any], quirks: frozenset[str]) -> None:
        super().__init__(vector, quirks)
        self.tree = RadixTree()

    def _node(self, i: int) -> dict[str, Any]:
        n = self.tree.nodes[i]
        return {"workers": len(n.workers), "children": len(n.children), "block_hash": n.block_hash}

    def observe(self) -> dict[str, Any]:
        t = self.tree
        lookup: dict[str, dict[str, Any]] = {}
        for (w, rank), table in sorted(t.lookup.items()):
            if rank != 0:
                continue
            lookup[str(w)] = {
                str(h): {"workers": sorted(x for x, _ in t.nodes[n].workers), "children": len(t.nodes[n].children)}
                for h, n in sorted(table.items())
            }
        out: dict[str, Any] = {
            "lookup": lookup,
            "lookup_len": len(t.lookup),
            "lookup_size": {str(w): len(tab) for (w, _), tab in sorted(t.lookup.items())},
            "root": self._node(0),
            "tree": [[n.tokens_hash, n.block_hash, sorted(n.children.items()), sorted(n.workers)] for n in t.nodes],
        }
        for (w, _), tab in t.lookup.items():
            out[f"lookup_has_empty_entry_for_worker_{w}"] = not tab
        return out

    def calls(self) -> dict[str, Any]:
        def node(_obj: Any, tokens_hash: Any) -> dict[str, Any]:
            child = self.tree.nodes[0].children.get(tokens_hash)
            if child is None:
                raise Uninterpretable(f"node({tokens_hash}): no root child with that tokens hash")
            return self._node(child)

        return {"node": node}

    def op_apply_event(self, a: dict[str, Any]) -> str:
        try:
            self.tree.apply_event(a["worker_id"], _event(a))
        except ModelError as e:
            return f"Err({e.id})"
        return "Ok"

    def op_find_matches(self, a: dict[str, Any]) -> dict[str, Any]:
        scores = self.tree.find_matches(list(a["local_hashes"]), bool(a.get("early_exit", False)))
        return {
            "scores": {str(w): n for (w, _), n in sorted(scores.items())},
            "score_keys": sorted(w for w, _ in scores),
        }

    def op_remove_worker(self, a: dict[str, Any]) -> None:
        self.tree.remove_worker(a["worker_id"])

    def op_clear_all_blocks(self, a: dict[str, Any]) -> None:
        self.tree.clear_all_blocks(a["worker_id"])


HARNESSES = (RadixTreeHarness,)
