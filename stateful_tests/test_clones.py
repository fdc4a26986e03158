"""Every hand-written ``clone`` is a deep, complete copy (issue 22): for random reachable states of
every component (ideal and faithful), the clone has the same key and snapshot; the same
operation on the original and on the clone gives the same outcome, events and next state; and
stepping either leaves the other untouched."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvmodel import components
from kvmodel.model.quirks import faithful

COMPONENTS = [c.name for c in components.with_(lambda c: c.api_world is not None)]


def _walk(name: str, quirks: Any, picks: list[int]) -> tuple[Any, Any, list[Any]]:
    sp = components.get(name).api_space()  # type: ignore[misc]
    s = sp.system({}, quirks)
    moves = sp.moves()
    enabled: list[Any] = []
    for p in picks:
        enabled = [m for m in moves if sp.allows(s, m)]
        if not enabled:
            break
        op, decoded, _ = sp.concrete(s, enabled[p % len(enabled)])
        s.apply(op, decoded)
    enabled = [m for m in moves if sp.allows(s, m)]
    return sp, s, enabled


def _observed(out: Any) -> str:
    events = [e.to_json() if hasattr(e, "to_json") else e for e in (out.events or [])]
    err = None if out.error is None else (type(out.error).__name__, str(getattr(out.error, "id", "")))
    return json.dumps({"result": out.result, "error": err, "events": events}, sort_keys=True, default=repr)


@pytest.mark.parametrize("mode", ["ideal", "faithful"])
@pytest.mark.parametrize("name", COMPONENTS)
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(picks=st.lists(st.integers(0, 10_000), max_size=25), last=st.integers(0, 10_000))
def test_clone_is_a_complete_independent_copy(name: str, mode: str, picks: list[int], last: int) -> None:
    quirks = sorted(faithful(name)) if mode == "faithful" else []
    sp, s, enabled = _walk(name, quirks, picks)
    c = s.clone()
    assert c.key() == s.key()
    assert c.snapshot() == s.snapshot()
    if not enabled:
        return
    key0, snap0 = s.key(), json.dumps(s.snapshot(), sort_keys=True, default=repr)
    move = enabled[last % len(enabled)]
    op, decoded, _ = sp.concrete(c, move)
    out_c = c.apply(op, decoded)
    # stepping the clone leaves the original as it was
    assert s.key() == key0
    assert json.dumps(s.snapshot(), sort_keys=True, default=repr) == snap0
    # and the original, stepped the same way, behaves exactly as the clone did — and leaves
    # the clone as it was (a copy-on-write clone shares structures with its original both ways)
    key_c, snap_c = c.key(), json.dumps(c.snapshot(), sort_keys=True, default=repr)
    op2, decoded2, _ = sp.concrete(s, move)
    out_s = s.apply(op2, decoded2)
    assert _observed(out_s) == _observed(out_c)
    assert c.key() == key_c
    assert json.dumps(c.snapshot(), sort_keys=True, default=repr) == snap_c
    assert s.key() == c.key()
    assert s.snapshot() == c.snapshot()
    # a second clone, and more steps on the original, leave the first clone alone too
    s.clone()
    for p in picks[:3]:
        allowed = [m for m in sp.moves() if sp.allows(s, m)]
        if not allowed:
            break
        op3, decoded3, _ = sp.concrete(s, allowed[p % len(allowed)])
        s.apply(op3, decoded3)
    assert c.key() == key_c
    assert json.dumps(c.snapshot(), sort_keys=True, default=repr) == snap_c


def test_records_copied_field_by_field_name_every_field() -> None:
    """The G1 clones copy these records by their constructors (``attrs.evolve`` was a sixth of
    a G1 search's time), positionally: each record's fields must be exactly those its clone
    passes, in that order, or a field added later would be reset or misplaced in every clone."""
    import attrs

    from kvmodel.model.g1.kvbm_backend import ActiveFull, Shadow
    from kvmodel.model.g1.kvbm_logical import _Node
    from kvmodel.model.g1.vllm_backend import Entry
    from kvmodel.model.g1.vllm_block_pool import Copy

    copied = {
        Copy: ["hash", "refs", "pins"],
        Entry: ["copy", "hash", "uuid", "pending"],
        ActiveFull: ["block", "plh", "refs"],
        Shadow: ["seq_hash", "block_id", "parent_hash", "local_hash", "token_ids", "cacheable", "aliases"],
        _Node: ["plh", "block", "tick", "parent", "children"],
    }
    for cls, names in copied.items():
        assert [f.name for f in attrs.fields(cls)] == names, cls.__name__


def _sequence_state(s: Any) -> str:
    """Everything a request's sequence holds, its seeded generator's position included (the key
    and the snapshot read only part of it)."""
    d = dict(vars(s))
    gen = d.pop("_gen", None)
    d["_gen"] = None if gen is None else gen.getstate()
    return json.dumps(d, sort_keys=True, default=repr)


@pytest.mark.parametrize("mode", ["ideal", "faithful"])
@pytest.mark.parametrize("name", ["g1_native", "g1_kvbm"])
@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(picks=st.lists(st.integers(0, 10_000), max_size=25), last=st.integers(0, 10_000))
def test_a_g1_step_changes_only_its_own_requests_sequence(name: str, mode: str, picks: list[int], last: int) -> None:
    """The G1 systems' clones share the request sequences (copy-on-write): a step on a clone
    works on a copy of its own request's sequence and touches no other, so every sequence the
    original holds is, field by field (the seeded generator's position too), what it was; the
    clone's other requests still share the original's sequence objects; a rejected step leaves
    the clone's sequences as they were."""
    quirks = sorted(faithful(name)) if mode == "faithful" else []
    sp, s, enabled = _walk(name, quirks, picks)
    if not enabled:
        return
    before = {o: _sequence_state(q) for o, q in s.seqs.items()}
    c = s.clone()
    move = enabled[last % len(enabled)]
    op, decoded, _ = sp.concrete(c, move)
    out = c.apply(op, decoded)
    assert {o: _sequence_state(q) for o, q in s.seqs.items()} == before
    owner = getattr(move, "owner", None)
    for o, q in c.seqs.items():
        if o != owner and o in s.seqs:
            assert q is s.seqs[o], f"request {o}'s sequence was copied by a step on request {owner}"
    if out.error is not None:
        assert {o: _sequence_state(q) for o, q in c.seqs.items()} == before
