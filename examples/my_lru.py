"""A worked example for ``docs/api.md``: *your* LRU evictor, checked against kvmodel.

``MyLru`` is the evictor of free blocks the Dynamo mocker uses (``lib/llm/src/mocker/evictor.rs``)
written the way a user would write one: an ``OrderedDict`` from the least to the most recently
freed object. It serves both models — the counter rewrite (``lru_evictor_counter``, with
``push_front``) and the wall-clock evictor as it should be (``lru_evictor_wallclock``, ideal:
exact LRU; the ``clock`` argument only orders inserts, which arrive in clock order). ``BUGS``
lists planted one-line mistakes (``MyLru(bug=...)``) that the differential check finds.

Run it: ``python examples/my_lru.py``.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

BUGS = {
    "evict_newest": "evict takes the most recently freed object",
    "insert_no_refresh": "inserting a held object leaves it where it was",
    "remove_always_true": "remove says true for an object it never held",
    "remove_forgets_nothing": "remove answers but keeps the object",
    "push_front_to_back": "push_front puts the object at the back",
    "evict_empty_zero": "evict of an empty evictor returns 0, not None",
    "len_off_by_one": "len counts one more than it holds",
    "evict_keeps_object": "evict answers the oldest object but keeps it",
}


class MyLru:
    """Free objects, least recently freed first."""

    def __init__(self, bug: str | None = None) -> None:
        self.bug = bug
        self.order: OrderedDict[Any, None] = OrderedDict()

    def insert(self, obj: Any) -> None:
        if obj in self.order and self.bug == "insert_no_refresh":
            return
        self.order.pop(obj, None)
        self.order[obj] = None

    def push_front(self, obj: Any) -> None:
        self.order.pop(obj, None)
        self.order[obj] = None
        if self.bug != "push_front_to_back":
            self.order.move_to_end(obj, last=False)

    def remove(self, obj: Any) -> bool:
        if self.bug == "remove_forgets_nothing":
            return obj in self.order
        found = self.order.pop(obj, 0) is None
        return True if self.bug == "remove_always_true" else found

    def evict(self) -> Any:
        if not self.order:
            return 0 if self.bug == "evict_empty_zero" else None
        if self.bug == "evict_keeps_object":
            return next(iter(self.order))
        obj, _ = self.order.popitem(last=self.bug == "evict_newest")
        return obj

    def __len__(self) -> int:
        return len(self.order) + (self.bug == "len_off_by_one")


class MyLruAdapter:
    """The adapter: trace-format operations (``insert {object, clock?}``, ``push_front``,
    ``remove``, ``evict``, ``len``) to calls."""

    def __init__(self, bug: str | None = None) -> None:
        self.bug = bug
        self.name = f"MyLru(bug={bug})" if bug else "MyLru"
        self.lru = MyLru(bug)

    def reset(self, config: dict[str, Any]) -> None:
        self.lru = MyLru(self.bug)

    def step(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        if op == "insert":
            out: Any = self.lru.insert(args["object"])
        elif op == "push_front":
            out = self.lru.push_front(args["object"])
        elif op == "remove":
            out = self.lru.remove(args["object"])
        elif op == "evict":
            out = self.lru.evict()
        else:
            out = len(self.lru)
        return {"returns": out, "events": []}


if __name__ == "__main__":
    from kvmodel.api import check_implementation

    for component in ("lru_evictor_counter", "lru_evictor_wallclock"):
        print(check_implementation(MyLruAdapter(), component).explain())
        for bug in BUGS:
            if bug == "push_front_to_back" and component == "lru_evictor_wallclock":
                continue  # the wall-clock evictor has no push_front
            print(check_implementation(MyLruAdapter(bug), component).explain().splitlines()[0])
