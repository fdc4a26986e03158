"""The G1 manager with the KVBM backend (issue 8): the kvbm-logical substrate's properties, the
vectors and what breaks them, the facade's default, the request-level machine, and Z3."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvmodel import vectors
from kvmodel.model.blocks import FullBlock, PartialBlock
from kvmodel.model.errors import ModelError, NativePanic
from kvmodel.model.g1.acquire import Ready
from kvmodel.model.g1.g1_manager import G1Manager
from kvmodel.model.g1.kvbm_backend import KvbmKvManager
from kvmodel.model.g1.kvbm_logical import LineageIndex, LruIndex, Substrate
from kvmodel.model.g1.sequence import ActiveSequence, G1Deref, G1Use
from kvmodel.model.quirks import faithful, quirks_of

from .conftest import VECTORS, require

C = "g1_kvbm"


def _kvbm_vectors() -> list[dict[str, Any]]:
    require(VECTORS.exists(), f"the shared vectors file is not at {VECTORS}")
    data = json.loads(VECTORS.read_text())
    return [v for v in data["vectors"] if v["component"] == "kvbm_backend"]


# ----------------------------------------------------------------------------- the substrate


@given(ops=st.lists(st.tuples(st.sampled_from(["insert", "take", "evict"]), st.integers(0, 5)), max_size=40))
def test_lineage_of_roots_is_lru(ops: list[tuple[str, int]]) -> None:
    """With root PLHs only (no lineage), the Lineage index evicts in insertion order, as Lru does."""
    lin, lru = LineageIndex(), LruIndex()
    tick = 0
    for op, k in ops:
        plh = (k, None, 0)
        if op == "insert" and not lru.contains(plh):
            lin.insert(plh, k, tick)
            lru.insert(plh, k, tick)
            tick += 1
        elif op == "take":
            assert lin.take(plh) == lru.take(plh)
        elif op == "evict":
            assert lin.evict() == lru.evict()
        assert len(lin) == len(lru) and sorted(lin.plhs()) == sorted(lru.plhs())


@given(depth=st.integers(1, 5), order=st.permutations(range(5)))
def test_lineage_evicts_leaves_only_and_prunes_ghosts(depth: int, order: list[int]) -> None:
    """A chain inserted in any order is evicted leaf first; nothing is left behind, ghosts included."""
    chain = [(10 + i, None if i == 0 else 10 + i - 1, i) for i in range(depth)]
    lin = LineageIndex()
    for t, i in enumerate(k for k in order if k < depth):
        lin.insert(chain[i], i, t)
    out = []
    while (got := lin.evict()) is not None:
        out.append(got[0][2])
    assert out == list(reversed(range(depth)))
    assert lin.nodes == {} and len(lin) == 0


@given(n=st.integers(1, 6), ask=st.integers(0, 8))
def test_allocation_is_all_or_nothing_and_fifo(n: int, ask: int) -> None:
    s = Substrate(n)
    got = s.allocate(ask)
    if ask > n:
        assert got is None and list(s.free) == list(range(n))
    else:
        assert got is not None and got[0] == list(range(ask))
        for b in got[0]:
            s.release_mutable(b)
        assert list(s.free) == [*range(ask, n), *range(ask)]  # released to the back


def test_reject_policy_dedups_onto_the_canonical_block_and_resurrects() -> None:
    s = Substrate(3)
    (a, b), _ = s.allocate(2)  # type: ignore[misc]
    plh = (1, None, 0)
    assert s.register(a, plh) == a
    assert s.register(b, plh) == a and s.dedup == 1 and list(s.free) == [2, b]
    s.drop(plh)
    s.drop(plh)
    assert len(s.inactive) == 1
    ((c,), _) = s.allocate(1)  # type: ignore[misc]
    assert s.register(c, plh) == a and len(s.inactive) == 0  # an inactive match is resurrected


# ----------------------------------------------------------------------------- vectors


def test_every_kvbm_vector_passes() -> None:
    vs = _kvbm_vectors()
    assert len(vs) >= 25
    bad = [r.line() for r in map(vectors.run_vector, vs) if r.status != "PASS"]
    assert bad == []


def _perturbed(v: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for i, step in enumerate(v["steps"]):
        exp = step.get("expect") or {}
        for k, val in exp.items():
            if isinstance(val, int) and not isinstance(val, bool):
                bad = json.loads(json.dumps(v))
                bad["steps"][i]["expect"][k] = val + 1
                out.append(bad)
                break
    return out


def test_perturbed_kvbm_expectations_fail() -> None:
    n = 0
    for v in _kvbm_vectors():
        for bad in _perturbed(v):
            assert vectors.run_vector(bad).status == "FAIL", v["name"]
            n += 1
    assert n >= 20


@pytest.mark.parametrize(
    "quirk,vector",
    [
        ("stored_before_removed", "test_block_lifecycle_stringent"),
        ("use_ready_counts_entries", "test_duplicate_use_bumps_refcount"),
        ("use_ready_counts_entries", "all_active_multi_block_use_only_retains_logical_owners"),
    ],
)
def test_an_ideal_model_fails_the_vector_its_quirk_shapes(quirk: str, vector: str) -> None:
    """The vectors pin the faithful behaviour: with the quirk off, the vector's expectation fails."""
    v = next(v for v in _kvbm_vectors() if v["name"] == vector)
    assert vectors.run_vector(v).status == "PASS"
    r = vectors.run_vector(v, quirks=faithful(C) - {quirk})
    assert r.status == "FAIL", r.line()


# ----------------------------------------------------------------------------- facade and model


def test_the_facade_defaults_to_kvbm_and_rejects_foreign_reservations() -> None:
    g = G1Manager(4, 2)
    assert g.backend == "kvbm" and g.kvbm is not None
    n = G1Manager(4, 2, backend="native")
    r = n.reserve_decode_blocks(1)
    with pytest.raises(NativePanic, match="different G1 backend"):
        g.release_decode_reservation(r)
    with pytest.raises(ModelError):
        G1Manager(4, 2, backend="vllm")


def test_caching_off_sequence_rehits_its_own_blocks_and_is_published_faithfully() -> None:
    """§2.6: random PLHs are stable, so a preempted request re-hits its own inactive blocks; the
    faithful backend publishes them (§6 #13), the ideal one does not."""
    for quirks, n_events in ((faithful(C), 1), ((), 0)):
        m = KvbmKvManager(4, 2, quirks=quirks)
        s = ActiveSequence([1, 2, 3, 4], 4, 2, enable_prefix_caching=False, name="x")
        sig = s.take_creation_signal()
        assert sig is not None and isinstance(m.process(sig), Ready)
        for d in s.reset_with_signal():
            m.process(d)
        again = s.prepare_allocation(4)
        assert again is not None and isinstance(m.process(again), Ready)
        assert m.num_inactive_blocks() == 0 and m.sub.dedup == 0  # both blocks re-hit
        assert len(m.drain_events()) == n_events


def test_deref_mid_list_panic_keeps_the_released_prefix_faithfully() -> None:
    for quirks, refs_after in ((faithful(C), 0), ((), 1)):
        m = KvbmKvManager(4, 2, quirks=quirks)
        m.process(G1Use((FullBlock(1),), (), ((1, None, 0),)))
        with pytest.raises(NativePanic, match="full block not in active pool"):
            m.process(G1Deref((FullBlock(1), FullBlock(2))))
        assert m.num_active_block_refs() == refs_after


def test_partial_named_twice_in_one_use() -> None:
    for quirks in (faithful(C), ()):
        m = KvbmKvManager(4, 2, quirks=quirks)
        with pytest.raises(NativePanic, match="fresh Use replaced active partial block"):
            m.process(G1Use((PartialBlock("u"), PartialBlock("u"))))
        assert (len(m.active_partial) == 1) == bool(quirks)  # §6 #24: the first one stays installed


# ----------------------------------------------------------------------------- machine, explorer


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_random_kvbm_runs_replay_deterministically(seed: int) -> None:
    """A random run of the request-level world, recorded as a trace, replays to the same bytes."""
    import random

    from kvmodel import traces
    from kvmodel.components.g1_kvbm.space import KvbmSpace

    sp = KvbmSpace(owners=2, prompts=5, pushes=2, decode=1)
    s = sp.system({}, ())
    rng = random.Random(seed)
    ops = []
    for _ in range(25):
        en = [m for m in sp.moves() if sp.allows(s, m)]
        op, dec, args = sp.concrete(s, rng.choice(en))
        s.apply(op, dec)
        ops.append((op, args))
    t = traces.record(C, {"max_capacity": 3, "plh_fragments": 2}, [], ops, origin={"engine": "test"})
    assert t["violation"] is None
    again = traces.record(C, {"max_capacity": 3, "plh_fragments": 2}, [], ops, origin={"engine": "test"})
    assert json.dumps(again, sort_keys=True) == json.dumps(t, sort_keys=True)
    rep = traces.replay(t)
    assert rep.divergence is None and rep.violation is None and rep.steps_run == len(ops)


# ----------------------------------------------------------------------------- Z3


def test_kvbm_spec_proves_every_ideal_invariant_and_needs_its_lemmas() -> None:
    """The issue's contract: every ideal catalogue invariant of the component is a spec
    property, and 1-induction proves them all (with the four lemmas); without the lemmas
    some are counterexamples to induction, one primary per PLH among them (the encoding
    keeps primaries and inactive entries apart, so the property is not structural)."""
    from kvmodel.invariants import for_component
    from kvmodel.specs import make_spec, runner
    from kvmodel.specs.engine import k_induction

    spec = make_spec(C, {})
    ideal = {i.name for i in for_component(C) if not i.lemma}
    assert {p.name for p in spec.ts.properties if not p.lemma} == ideal
    rep = runner.prove(C, {"owners": 3, "capacity": 3}, (), max_k=1)
    assert rep["all_proved"] and len(rep["invariants"]) == len(spec.ts.properties)
    spec.ts.properties = tuple(p for p in spec.ts.properties if not p.lemma)
    res = {r.name: r.status for r in k_induction(spec.ts, max_k=1)}
    assert res["kvbm.one_primary_per_plh"] == "cti"
    assert res["kvbm.stored_parent_announced"] == "cti"


def _modelled() -> list[str]:
    from kvmodel.specs.kvbm import MODELLED

    return sorted(MODELLED)


@pytest.mark.parametrize("quirk", _modelled())
def test_kvbm_bmc_finds_the_quirk_and_its_trace_replays(quirk: str) -> None:
    from kvmodel.model.quirks import QUIRKS
    from kvmodel.specs import make_spec, runner

    cfg = {"owners": 1, "capacity": 3}
    props = {p.name for p in make_spec(C, cfg).ts.properties}
    want = [b for b in QUIRKS[quirk].breaks if b in props]
    assert want, f"{quirk} breaks nothing the spec states"
    rep = runner.run_bmc(C, 6, cfg, (quirk,), induction=False, properties=want)
    assert all(r["status"] == "violated" and r.get("replayed") for r in rep["invariants"]), rep["invariants"]


# The agreement search per mode: the ideal world exhaustively; §6 #7 far enough to meet a
# failed Use that leaves a parent older than its child (where the Lineage leaf rule and plain
# oldest-first part); the other quirks a few hundred states each.
AGREEMENT_STATES = {"": 100_000, "failed_use_reorders_inactive": 1_000}


@pytest.mark.parametrize("mode", [(), *[(q,) for q in _modelled()]], ids=lambda m: m[0] if m else "ideal")
def test_kvbm_spec_steps_agree_with_the_executable_model(mode: tuple[str, ...]) -> None:
    """Every transition of the executable system through the spec's operations (one
    request, capacity 3; breadth-first): from the abstraction of the state before, the
    spec's effect gives exactly the abstraction of the state after, the same Use result,
    and the same stream and step faults."""
    from kvmodel.specs.kvbm import agreement

    limit = AGREEMENT_STATES.get(mode[0] if mode else "", 300)
    rep = agreement({"owners": 1, "capacity": 3}, mode, max_states=limit)
    assert rep["diffs"] == [], rep
    assert rep["states"] >= min(limit, 1_500)
    if not mode:
        assert rep["complete"]


def test_kvbm_spec_refuses_quirks_it_does_not_model() -> None:
    from kvmodel.specs import make_spec

    with pytest.raises(ModelError, match="does not model"):
        make_spec(C, {}, ("commit_asserts_after_partial_commit",))


def test_faithful_bmc_reaches_a_verdict_and_leaves_the_ideal_proofs_lemmas_out() -> None:
    """Regression (issue 21): with the faithful quirks on, the spec's `kvbm.primaries_held` lemma
    speaks of partial-hold bookkeeping `active_partial_use_noop` contradicts by design; BMC used
    to raise a spec/model Disagreement. A lemma no active quirk is declared to break is not
    checked (and is listed); every counterexample found replays."""
    from kvmodel import components
    from kvmodel.model.quirks import faithful
    from kvmodel.specs.runner import run_bmc

    rep = run_bmc(C, 3, None, components.get(C).modelled_quirks(faithful(C)))
    assert rep["verdict"] == "violation"
    assert "kvbm.primaries_held" in rep["lemmas_not_checked"]
    assert "kvbm.active_named" not in rep["lemmas_not_checked"]  # plh_reuse_keeps_first_name breaks it
    assert all(r.get("replayed") for r in rep["invariants"] if r["status"] == "violated")


# The first swarm campaign (seed 2026) found the ideal model "violating" kvbm.removed_before_stored:
# a decode push crossing a block boundary runs two Uses, the first publishing a Stored, the second
# the Removed of what it evicted. The order is per Use (each process_use publishes its own
# events), so the monitor scopes it per Use; the quirk still breaks it within one Use.
SWARM_2026 = [
    ("reserve_destination", {"caching": True, "owner": 2, "tokens": [1, 2, 3, 4, 5]}),
    ("new_request", {"caching": True, "owner": 0, "tokens": [15, 16, 5]}),
    ("activate_destination", {"owner": 2}),
    ("free", {"owner": 2}),
    ("allocate", {"owner": 0}),
    ("push", {"owner": 0, "token": 6}),
    ("push", {"owner": 0, "token": 6}),
]


@pytest.mark.parametrize("quirks, broken_at", [([], set()), (["stored_before_removed"], {4})])
def test_removed_before_stored_is_per_use(quirks: list[str], broken_at: set[int]) -> None:
    from kvmodel.systems import make_system

    cfg = {"block_size": 2, "max_capacity": 3, "plh_fragments": 2, "publishers": True}
    s = make_system("g1_kvbm", cfg, quirks)
    at = set()
    for i, (op, args) in enumerate(SWARM_2026):
        out = s.step(op, args)
        assert out.error is None, (op, out.error)
        if "kvbm.removed_before_stored" in [v.invariant for v in out.violations]:
            at.add(i)
    assert at == broken_at  # the quirk: the allocate's one Use publishes Stored, then Removed
    kinds = [type(p.event.data).__name__ for p in out.events]
    assert kinds == ["Stored", "Removed"]  # two Uses in one push: Stored by the first, Removed by the second


@pytest.mark.parametrize("prompt", [[7, 8], [15, 16, 5]])
def test_a_request_that_resent_its_blocks_holds_each_promoted_block_where_it_held_the_partial(
    prompt: list[int],
) -> None:
    """Regression: the G1 KVBM harness replaced a promoted partial by the sequence's block at the
    same index of the request's holdings, but a ``resend`` holds every block twice, so those
    indices are not the sequence's positions. After a resend and three pushes the ideal model then
    reported ``kvbm.refs_match_holders`` (the harness held the new partial twice, not the promoted
    block) and rejected the request's free; with a resent partial (faithful) the harness crashed
    with an IndexError. Each held copy of the partial is the promoted full block."""
    from kvmodel import components

    quirks = ["active_partial_use_noop"] if len(prompt) % 2 else []  # a resent partial needs the quirk
    s = components.get("g1_kvbm").api_space().system({}, quirks)  # type: ignore[misc]
    steps = [("new_request", {"owner": 0, "tokens": prompt}), ("allocate", {"owner": 0}), ("resend", {"owner": 0})]
    steps += [("push", {"owner": 0, "token": 6})] * 3
    for op, args in steps:
        s.apply(op, s.decode(op, args))
    held, unique = s.holdings[0], s.seqs[0].unique
    assert all(isinstance(b, FullBlock) or b == unique[-1] for b in held), held
    assert sorted(set(held), key=repr) == sorted(set(unique), key=repr)
    if not quirks:
        out = s.apply("free", s.decode("free", {"owner": 0}))
        assert out.error is None and out.violations == [], (out.error, out.violations)


CACHING_OFF_TRACE = [
    ("new_request", {"owner": 1, "tokens": [1, 2], "caching": False}),
    ("allocate", {"owner": 1}),
    ("free", {"owner": 1}),
    ("new_request", {"owner": 1, "tokens": [7, 8], "caching": False}),
    ("allocate", {"owner": 1}),
    ("counts", {}),
]


@pytest.mark.parametrize("faithful", [False, True])
def test_a_reused_request_id_never_finds_an_earlier_caching_off_block(faithful: bool) -> None:
    """Issue 58: Rust draws fresh random hashes for every caching-disabled sequence, so a later
    request of the same id (other tokens, caching off) allocates a fresh block: Ready(1), a fresh
    Stored (faithful), and the earlier block stays inactive."""
    from kvmodel.model.quirks import faithful as faithful_set
    from kvmodel.systems import make_system

    s = make_system("g1_kvbm", {"max_capacity": 3}, sorted(faithful_set("g1_kvbm")) if faithful else [])
    obs = [s.step(op, a).observation(None) for op, a in CACHING_OFF_TRACE]
    assert obs[4]["returns"] == "Ready(1)"
    assert obs[5]["returns"]["num_inactive_blocks"] == 1
    if faithful:
        first = obs[1]["events"][0]["data"]["stored"]["blocks"][0]["block_hash"]
        second = obs[4]["events"][0]["data"]["stored"]["blocks"][0]["block_hash"]
        assert first != second


def test_random_hashes_are_compared_up_to_a_renaming() -> None:
    """A port draws its own random hashes for caching-disabled sequences: the check compares them
    up to a consistent renaming, and a port that reuses one where kvmodel draws a fresh one still
    diverges."""
    from kvmodel.api import ModelAdapter, differential

    class OwnRandom(ModelAdapter):
        def step(self, op: str, args: Any) -> dict[str, Any]:
            obs = super().step(op, args)
            return json.loads(json.dumps(obs), object_hook=lambda d: _shift(d))

    def _shift(d: dict[str, Any]) -> dict[str, Any]:
        for k in ("block_hash", "parent_hash"):
            v = d.get(k)
            if isinstance(v, int) and v not in KNOWN:
                d[k] = (v * 7 + 1) % 2**64
        if isinstance(d.get("block_hashes"), list):
            d["block_hashes"] = [(v * 7 + 1) % 2**64 if v not in KNOWN else v for v in d["block_hashes"]]
        return d

    KNOWN: set[int] = set()  # no caching prompt's hash is shifted in the trace below
    q = sorted(__import__("kvmodel.model.quirks", fromlist=["faithful"]).faithful("g1_kvbm"))
    d, n = differential(OwnRandom("g1_kvbm", q), "g1_kvbm", {"max_capacity": 3}, q, CACHING_OFF_TRACE)
    assert d is None and n == len(CACHING_OFF_TRACE)
    cached = [("new_request", {"owner": 1, "tokens": [1, 2], "caching": True}), ("allocate", {"owner": 1})]
    d, _ = differential(OwnRandom("g1_kvbm", q), "g1_kvbm", {"max_capacity": 3}, q, cached)
    assert d is not None and d.what == "events"  # a hashed block's hash is compared exactly


def test_a_plh_alias_is_published_under_its_new_name_ideally_and_held_until_a_bad_deref() -> None:
    """Issue 58: ``bad_use plh_alias`` names block 999999 under the PLH of tokens [1, 2] (Rust's
    PLH-reuse test builds such a Use); the ideal model publishes it (lineage holds: its tokens
    hash is its hash), the faithful reuse keeps the first name (§6 #9), and the Use's block is
    held until ``bad_deref`` names it."""
    from kvmodel.components.g1_kvbm.system import G1KvbmSystem

    steps = [
        ("new_request", {"owner": 0, "tokens": [1, 2, 3, 4], "caching": True}),
        ("allocate", {"owner": 0}),
        ("bad_use", {"kind": "plh_alias"}),
        ("bad_deref", {"owner": 0}),
        ("counts", {}),
    ]
    for quirks, stored in (([], [[999_999]]), (["plh_reuse_keeps_first_name"], [])):
        s = G1KvbmSystem({}, quirks)
        outs = [s.step(op, a) for op, a in steps]
        alias = outs[2]
        assert alias.error is None and str(alias.result) == "Ready(0)"
        got = [[b.block_hash for b in e.event.data.blocks] for e in alias.events]
        assert got == stored
        broken = {v.invariant for v in alias.violations}
        assert broken <= {b for q in quirks_of("g1_kvbm") if q.name in quirks for b in q.breaks}
        assert bool(broken) == bool(quirks)
        assert s.holdings == {} and outs[3].error is None
        assert outs[4].result == {"num_active_blocks": 0, "num_inactive_blocks": 2, "num_active_block_refs": 0}


def test_the_generators_runs_are_accepted_from_the_start() -> None:
    """Each ``cached`` run of the generator's world (a caching prompt admitted and freed) is
    accepted step by step from an empty manager; the explorer's worlds declare none."""
    from kvmodel import workloads
    from kvmodel.components import get
    from kvmodel.components.g1_kvbm.space import KVBM_PROMPTS, KvbmSpace

    c = get("g1_kvbm")
    sp = c.api_space()
    runs = sp.runs()["cached"]
    assert len(runs) == sp.owners * sum(1 for _, caching in KVBM_PROMPTS[: sp.prompts] if caching)
    for n in range(len(runs)):
        got = workloads._run(sp, workloads.Group("cached", runs=(runs[n],)), c.system(None, []), 0)
        assert got is not None and [op for op, _ in got[0]] == ["new_request", "allocate", "free"]
    assert KvbmSpace().runs() == {}


@pytest.mark.parametrize("quirk", ["failed_use_reorders_inactive", "plh_reuse_keeps_first_name", "multi_lru"])
def test_a_default_run_reaches_the_kvbm_defects_of_long_set_ups(quirk: str) -> None:
    """Issue 58: at default settings (seed 0, 200 workloads) the generator reaches a failed
    admission's reordering observed by a later eviction, PLH reuse at real fragment widths, and
    MultiLru promotion (a frequency-blind MultiLru, the plain LRU index, differs); each
    counterexample shrinks to a handful of steps."""
    from kvmodel import api

    class FrequencyBlind(api.ModelAdapter):
        def reset(self, config: dict[str, Any]) -> None:
            super().reset({**config, "eviction_backend": "Lru"})

    if quirk == "multi_lru":
        impl: Any = FrequencyBlind("g1_kvbm")
        config: dict[str, Any] | None = {"eviction_backend": "MultiLru"}
    else:
        impl, config = api.ModelAdapter("g1_kvbm", [quirk]), None
    rep = api.check_implementation(impl, "g1_kvbm", config=config, step_timeout=None, coverage=False)
    assert not rep.ok and rep.divergence is not None and rep.divergence.what == "events"
    assert rep.ops is not None and len(rep.ops) <= 16


def test_a_fresh_block_named_twice_is_registered_once_and_held_twice() -> None:
    """Issue 58: ``bad_use dup_full`` reaches kvbm-logical's in-batch Reject deduplication (Rust's
    duplicate-fresh-registration test): one Stored, one block with two references held by the
    caller; each ``bad_deref`` releases one, and the block is inactive after the second."""
    from kvmodel.components.g1_kvbm.system import G1KvbmSystem

    for quirks in ([], faithful("g1_kvbm")):
        s = G1KvbmSystem({}, quirks)
        got = s.step("bad_use", {"kind": "dup_full"})
        assert got.error is None and not got.violations
        assert str(got.result) == ("Ready(2)" if quirks else "Ready(1)")
        assert [[b.block_hash for b in e.event.data.blocks] for e in got.events] == [[999_999]]
        assert s.model.kvbm.active_full[999_999].refs == 2
        for o, left in ((0, 1), (1, 0)):
            s.step("new_request", {"owner": o, "tokens": [7, 8], "caching": True})
            assert s.step("bad_deref", {"owner": o}).error is None
            assert len(s.holdings.get(s.ALIAS_HOLDER, [])) == left
        counts = s.step("counts", {}).result
        assert counts["num_active_blocks"] == 0 and counts["num_inactive_blocks"] == 1
