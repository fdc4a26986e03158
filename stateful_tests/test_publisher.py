"""The worker-side KV event publisher as a component (``kv_event_publisher``): a publisher written
apart from the model (a multiset of copies, no filter object) passes both equality and invariant
mode; planted defects of each kind are caught and shrunk; the named revisions differ from the
faithful one exactly where the dedup matters."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvmodel import components
from kvmodel.api import check_implementation
from kvmodel.model.events import Cleared, KvCacheEvent, Removed, Stored, StoredBlock
from kvmodel.model.publisher import KvEventPublisher

NAME = "kv_event_publisher"
FAST = {"coverage": False, "workloads": 120}


class CopyCountingPublisher:
    """A publisher as a user might write it: per (rank, hash) the number of Stored copies seen,
    a Removed passing the hashes that drop to none, ids counting what was sent.

    ``bug``: ``dedup_off`` (every Removed passes), ``early`` (a Removed passes with one copy
    left), ``id_gap`` (a swallowed Removed still takes an id), ``clear_all`` (a Cleared forgets
    every rank)."""

    operations = None

    def __init__(self, bug: str | None = None) -> None:
        self.bug = bug
        self.name = "copy-counting publisher" + (f" ({bug})" if bug else "")

    def reset(self, config: dict[str, Any]) -> None:
        self.copies: dict[tuple[int, int], int] = {}
        self.next_id = 1

    def _send(self, data: Any, rank: int) -> list[dict[str, Any]]:
        ev = {"event_id": self.next_id, "data": data, "dp_rank": rank}
        self.next_id += 1
        return [ev]

    def step(self, op: str, args: Any) -> dict[str, Any]:
        r = args["dp_rank"]
        if op == "stored":
            for b in args["blocks"]:
                self.copies[(r, b["block_hash"])] = self.copies.get((r, b["block_hash"]), 0) + 1
            blocks = [{**b, "mm_extra_info": None} for b in args["blocks"]]
            data = {"stored": {"parent_hash": args.get("parent_hash"), "start_position": None, "blocks": blocks}}
            return {"returns": None, "events": self._send(data, r)}
        if op == "removed":
            out = []
            for h in args["block_hashes"]:
                n = self.copies.get((r, h), 0)
                last = 2 if self.bug == "early" else 1
                if n <= last or self.bug == "dedup_off":
                    self.copies.pop((r, h), None)
                    out.append(h)
                else:
                    self.copies[(r, h)] = n - 1
            if not out:
                if self.bug == "id_gap":
                    self.next_id += 1
                return {"returns": None, "events": []}
            return {"returns": None, "events": self._send({"removed": {"block_hashes": out}}, r)}
        self.copies = {} if self.bug == "clear_all" else {k: n for k, n in self.copies.items() if k[0] != r}
        return {"returns": None, "events": self._send("cleared", r)}


def test_an_independent_publisher_agrees_with_the_model_in_both_modes() -> None:
    eq = check_implementation(CopyCountingPublisher(), NAME, **FAST)
    assert eq.verdict == "pass" and eq.steps > 500, eq.explain()
    inv = check_implementation(CopyCountingPublisher(), NAME, check="invariants", **FAST)
    assert inv.verdict == "pass", inv.explain()
    checked = set(inv.extra["invariants"]["checked"])
    assert {"publisher.removed_at_last_copy", "publisher.event_ids_consecutive"} <= checked
    assert "publisher.router_view_matches_engine" in checked


@pytest.mark.parametrize(
    ("bug", "invariant"),
    [
        ("dedup_off", "publisher.removed_at_last_copy"),
        ("early", "publisher.removed_at_last_copy"),
        ("id_gap", "publisher.event_ids_consecutive"),
        ("clear_all", "publisher.removed_at_last_copy"),
    ],
)
def test_a_wrong_publisher_is_caught_in_invariant_mode_with_a_short_trace(bug: str, invariant: str) -> None:
    rep = check_implementation(CopyCountingPublisher(bug), NAME, check="invariants", **FAST)
    d = rep.divergence
    assert rep.verdict == "violation" and d is not None and d.what == "invariant", rep.explain()
    assert d.model["invariant"] == invariant
    assert rep.ops is not None and len(rep.ops) <= 5


def test_the_pre_dedup_revision_is_accepted_only_when_named() -> None:
    """The publisher before #8012 breaks the invariants (its quirk is known when accepted)."""
    bad = check_implementation(CopyCountingPublisher("dedup_off"), NAME, check="invariants", **FAST)
    assert bad.verdict == "violation"
    ok = check_implementation(CopyCountingPublisher("dedup_off"), NAME, check="invariants", accept="9b3e9249f^", **FAST)
    assert ok.verdict == "pass", ok.explain()
    assert "publisher.removed_at_last_copy" in ok.extra["invariants"]["known"]


_EVENTS = st.lists(
    st.tuples(
        st.sampled_from(["stored", "removed", "cleared"]), st.integers(0, 1), st.lists(st.integers(0, 3), max_size=3)
    ),
    max_size=25,
)


def _feed(p: KvEventPublisher, ops: list[Any]) -> list[KvCacheEvent | None]:
    out = []
    for kind, r, hs in ops:
        if kind == "stored":
            ev = KvCacheEvent(0, Stored(None, tuple(StoredBlock(h, h) for h in hs)), r)
        elif kind == "removed":
            ev = KvCacheEvent(0, Removed(tuple(hs)), r)
        else:
            ev = KvCacheEvent(0, Cleared(), r)
        out.append(p.publish(ev))
    return out


@given(_EVENTS)
def test_the_revisions_differ_from_the_faithful_publisher_only_on_held_removals(ops: list[Any]) -> None:
    """What reaches the router under 9b3e9249f^ (no filter) differs from the faithful publisher
    only in Removed events, and only by hashes of which the engine still held a copy."""
    faithful, raw = KvEventPublisher(), KvEventPublisher(("removed_passes_every_copy",))
    copies: dict[tuple[int, int], int] = {}
    for (kind, r, hs), a, b in zip(ops, _feed(faithful, ops), _feed(raw, ops), strict=True):
        if kind == "removed":
            held = []
            for h in hs:
                n = copies.get((r, h), 0)
                if n > 1:
                    held.append(h)
                copies[(r, h)] = max(n - 1, 0)
            got_a = a.data.block_hashes if a is not None else ()
            got_b = b.data.block_hashes if b is not None else ()
            assert list(got_b) == list(hs) or not hs
            rest = list(got_b)
            for h in held:
                rest.remove(h)
            assert rest == list(got_a)
        else:
            assert (a is None) == (b is None) and a is not None and b is not None and a.data == b.data
            if kind == "stored":
                for h in hs:
                    copies[(r, h)] = copies.get((r, h), 0) + 1
            else:
                copies = {k: n for k, n in copies.items() if k[0] != r}


def test_the_component_is_in_the_check_matrix_with_its_revisions() -> None:
    c = components.get(NAME)
    assert c.spec is not None and c.space is not None and c.machine is not None and c.observer is not None
    from kvmodel.model.quirks import revisions_of

    assert [r.name for r in revisions_of(NAME)] == ["6f64a59b6", "9b3e9249f", "9b3e9249f^"]
