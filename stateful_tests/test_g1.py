"""The G1 manager with the native backend: the block pool's properties, the facade's quirks on
the vectors, and the request-level machine (issue 7)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kvmodel import vectors
from kvmodel.model.errors import ModelError
from kvmodel.model.g1.acquire import G1Acquire, Ready
from kvmodel.model.g1.sequence import ActiveSequence
from kvmodel.model.g1.vllm_block_pool import NativePool
from kvmodel.model.hashing import local_block_hashes, sequence_hashes

from .conftest import VECTORS, require

# ----------------------------------------------------------------------------- the pool

POOL_OPS = st.lists(
    st.tuples(
        st.sampled_from(["reserve", "alloc", "cache", "release", "cancel"]), st.integers(0, 5), st.integers(0, 3)
    ),
    max_size=40,
)


@given(cap=st.integers(1, 4), ops=POOL_OPS)
def test_pool_occupancy_visibility_and_atomic_reservations(cap: int, ops: list[tuple[str, int, int]]) -> None:
    """Occupancy never exceeds capacity; the LRU is exactly the idle cached copies; a hash is
    reported removed exactly when its last copy goes; a failed reservation changes nothing."""
    p = NativePool(cap, ())
    res: list[Any] = []
    copies: list[int] = []
    for op, x, h in ops:
        before = p.clone()
        try:
            if op == "reserve":
                prefix = [h] if x % 2 and h in p.by_hash else []
                out = p.reserve(prefix, x % 3)
                if out is None:
                    assert p.snapshot() == before.snapshot() and p.visible() == before.visible()
                else:
                    gone = before.visible() - p.visible()
                    assert sorted(out.removed) == sorted(gone) and len(set(out.removed)) == len(out.removed)
                    res.append(out.reservation)
            elif op == "alloc" and res:
                copies.append(p.allocate_private(res[x % len(res)]))
            elif op == "cache" and copies:
                i = copies[x % len(copies)]
                first = h not in p.by_hash
                assert p.cache_private(i, h) == first
            elif op == "release" and copies:
                p.release(copies.pop(x % len(copies)))
            elif op == "cancel" and res:
                p.cancel(res.pop(x % len(res)))
        except ModelError:
            pass  # documented panics (fresh capacity used up, copy cached twice, ...)
        assert len(p.copies) + p.reserved <= p.capacity
        assert set(p.inactive) == {i for i, c in p.copies.items() if c.idle}
        assert p.num_active() == len(p.copies) - len(p.inactive) + p.reserved
        assert all(p.by_hash[hh] for hh in p.by_hash)


def test_cancel_requeues_prefix_leaf_first() -> None:
    p = NativePool(3, ())
    seed = p.reserve([], 3)
    assert seed is not None
    ids = [p.allocate_private(seed.reservation) for _ in range(3)]
    for i, h in zip(ids, (1, 2, 3), strict=True):
        p.cache_private(i, h)
        p.release(i)
    r = p.reserve([2, 3], 0)
    assert r is not None and p.lru_hashes() == [1]
    p.cancel(r.reservation)
    assert p.lru_hashes() == [1, 3, 2]  # the leaf (3) is older than its parent (2)


# ----------------------------------------------------------------------------- the sequence


def test_new_sequence_hashes_are_the_mockers() -> None:
    s = ActiveSequence(range(10), 4, 4, name="S")
    want = sequence_hashes(local_block_hashes(list(range(10)), 4))
    assert s.seq_hashes == want and [p[0] for p in s.plhs] == want
    assert [p[1] for p in s.plhs] == [None, want[0]]
    sig = s.take_creation_signal()
    assert sig is not None and len(sig.blocks) == 3 and sig.parent is None and len(sig.plhs) == 2
    assert s.push(10) is None and s.push(11) is None
    p = s.promote_computed_tail(12)
    assert p is not None and p.parent_hash == want[1] and p.uuid == "S.u0"
    assert s.terminal_signal().blocks[0].hash == p.seq_hash  # type: ignore[union-attr]


# ----------------------------------------------------------------------------- vectors have teeth


def _g1_vectors() -> list[dict[str, Any]]:
    require(VECTORS.exists(), f"the shared vectors file is not at {VECTORS}")
    data = json.loads(VECTORS.read_text())
    return [v for v in data["vectors"] if v["component"] in ("g1_manager", "native_vllm_backend")]


def test_the_parent_before_child_vector_fails_on_the_366ff0ef_order() -> None:
    """The vector pins the seed's order (R05); run on revision 366ff0ef, the child's Stored comes first."""
    v = next(v for v in _g1_vectors() if "parent_before_promoted_tail" in v["name"])
    r = vectors.run_vector(v)
    assert r.status == "PASS" and r.revision == "6125e8260"
    r = vectors.run_vector(v, revision_name="366ff0ef")
    assert r.status == "FAIL" and "events[0]" in r.message


def test_perturbed_native_expectations_fail() -> None:
    for v in _g1_vectors():
        for step in v["steps"]:
            exp = step.get("expect") or {}
            got = G1Acquire.from_json(exp.get("returns"))
            if isinstance(got, Ready) and got.n is not None:
                bad = json.loads(json.dumps(v))
                bad["steps"][v["steps"].index(step)]["expect"]["returns"] = "Ready(99)"
                assert vectors.run_vector(bad).status == "FAIL", v["name"]
                break


@given(st.one_of(st.none(), st.integers(0, 2**32)))
def test_g1_acquire_values_keep_their_type_and_their_text(n: int | None) -> None:
    """``Ready(n)`` / ``CapacityExhausted`` are typed values, not strings, whose JSON form is the
    trace's text: JSON, copies and pickles give the same value and type back."""
    import copy
    import pickle

    from kvmodel.model.g1.acquire import CAPACITY_EXHAUSTED, CapacityExhausted, plain

    r = Ready(n)
    text = "Ready" if n is None else f"Ready({n})"
    assert r.to_json() == str(r) == repr(r) == text and r.n == n and not isinstance(r, str) and r != text
    assert plain({"returns": [r, (CAPACITY_EXHAUSTED, 1)], "x": "Ready"}) == {
        "returns": [text, ("CapacityExhausted", 1)],
        "x": "Ready",
    }
    for v, cls in ((r, Ready), (CAPACITY_EXHAUSTED, CapacityExhausted)):
        back = G1Acquire.from_json(json.loads(json.dumps(plain(v))))
        assert back == v and type(back) is cls
        assert type(copy.deepcopy(v)) is cls and type(pickle.loads(pickle.dumps(v))) is cls
    assert G1Acquire.from_json(f"Ready({n})x") is None and G1Acquire.from_json(3) is None
