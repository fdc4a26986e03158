"""The Z3 engine and specs: proofs, BMC at minimal depth, and agreement with the executable model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import z3

from kvmodel import components
from kvmodel.components.kv_manager.actions import Process
from kvmodel.components.kv_manager.space import KvSpace
from kvmodel.components.lru.actions import Insert, InsertAfter, Len
from kvmodel.components.lru.space import LruSpace
from kvmodel.model.quirks import QUIRKS, breakable, faithful, quirks_of, revision
from kvmodel.specs import make_spec, universe_of
from kvmodel.specs.engine import Operation, Property, TransitionSystem, bmc, k_induction
from kvmodel.specs.g1 import UNIVERSES as G1_UNIVERSES
from kvmodel.specs.g1 import trace_agreement
from kvmodel.specs.registry import UNIVERSES as REG_UNIVERSES
from kvmodel.specs.runner import Disagreement, agreement_run, prove, run_bmc

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = [
    e for e in json.loads((ROOT / "specs" / "manifest.json").read_text())["entries"] if e["engine"] == "explore"
]
LRUS = ("lru_evictor_wallclock", "lru_evictor_counter")


def with_requires(name: str) -> tuple[str, ...]:
    return (name, *QUIRKS[name].requires)


# --------------------------------------------------------------------------- engine


def _shift_register() -> TransitionSystem:
    """a := b, b := 0 from a = b = 0: ``a == 0`` is 2-inductive but not 1-inductive."""

    def step(s: Any, p: Any) -> Any:
        return z3.BoolVal(True), {"a": s["b"], "b": z3.IntVal(0)}

    return TransitionSystem(
        "shift",
        (("a", "int"), ("b", "int")),
        lambda s: z3.And(s["a"] == 0, s["b"] == 0),
        (Operation("step", (), step),),
        (Property("a_zero", lambda s: s["a"] == 0),),
    )


def test_k_induction_needs_k2_and_reports_cti_at_k1() -> None:
    ts = _shift_register()
    (r1,) = k_induction(ts, max_k=1)
    assert r1.status == "cti" and r1.k == 1 and r1.states is not None
    assert r1.states[-1]["a"] != 0  # the CTI ends in a bad state
    (r2,) = k_induction(ts, max_k=2)
    assert (r2.status, r2.k) == ("proved", 2)


def test_bmc_reports_first_depth_of_violation() -> None:
    def step(s: Any, p: Any) -> Any:
        return p["d"] >= 0, {"x": s["x"] + p["d"]}

    ts = TransitionSystem(
        "counter",
        (("x", "int"),),
        lambda s: s["x"] == 0,
        (Operation("add", (("d", "int"),), step),),
        (Property("below_3", lambda s: s["x"] < 3), Property("nonneg", lambda s: s["x"] >= 0)),
    )
    below, nonneg = bmc(ts, 3)
    assert (below.status, below.k) == ("violated", 1)  # one step adding 3
    assert below.steps is not None and below.steps[0].params["d"] >= 3
    assert (nonneg.status, nonneg.k) == ("holds_to_depth", 3)
    (ind,) = k_induction(ts, properties=["nonneg"], max_k=1)
    assert ind.status == "proved"


def test_houdini_drops_unproved_assumptions() -> None:
    """A property that only follows from a false one must not be reported proved."""

    def step(s: Any, p: Any) -> Any:
        return z3.BoolVal(True), {"x": s["x"] + 1}

    ts = TransitionSystem(
        "grow",
        (("x", "int"),),
        lambda s: s["x"] == 0,
        (Operation("inc", (), step),),
        # "x < 1" is false after one step; "x < 2" would be 1-inductive only assuming "x < 1".
        (Property("lt1", lambda s: s["x"] < 1), Property("lt2", lambda s: s["x"] < 2)),
    )
    results = {r.name: r.status for r in k_induction(ts, max_k=1)}
    assert results == {"lt1": "cti", "lt2": "cti"}


def test_solver_timeout_is_inconclusive_never_proved() -> None:
    spec = make_spec("kv_manager", {"max_capacity": 4, "n_full": 6, "partials": 1, "max_batch": 3})
    results = k_induction(spec.ts, max_k=1, timeout_ms=1, properties=["kv.capacity_bound"])
    assert all(r.status != "proved" for r in results)
    assert any(r.status == "inconclusive" for r in results)


# --------------------------------------------------------------------------- proofs


def test_prove_kv_manager_ideal_capacity4_six_ids() -> None:
    rep = prove("kv_manager", {"max_capacity": 4, "n_full": 6, "partials": 1, "max_batch": 2})
    assert rep["all_proved"], rep["invariants"]
    assert {r["invariant"] for r in rep["invariants"]} >= {
        "kv.capacity_bound",
        "kv.refcount_conservation",
        "kv.router_view_matches_resident",
        "kv.store_parent_stored",
    }


@pytest.mark.parametrize("cfg", [{"max_capacity": 2, "n_full": 3, "partials": 2, "max_batch": 3, "channel": False}])
def test_prove_kv_manager_other_universe(cfg: dict[str, Any]) -> None:
    assert prove("kv_manager", cfg)["all_proved"]


def test_faithful_kv_manager_two_invariants_hold_for_every_state() -> None:
    rep = prove("kv_manager", {}, faithful("kv_manager"), max_k=1)
    proved = {r["invariant"] for r in rep["invariants"] if r["status"] == "proved"}
    assert proved == {"kv.refcount_positive", "kv.capacity_bound"}


@pytest.mark.parametrize("cfg", list(REG_UNIVERSES.values()), ids=list(REG_UNIVERSES))
def test_prove_registry_ideal(cfg: dict[str, Any]) -> None:
    rep = prove("kvbm_block_registry", cfg, max_k=1)
    assert rep["all_proved"], [r for r in rep["invariants"] if r["status"] != "proved"]
    assert len(rep["invariants"]) == 9


def test_registry_without_its_lemmas_is_not_1_inductive() -> None:
    spec = make_spec("kvbm_block_registry", {})
    spec.ts.properties = tuple(p for p in spec.ts.properties if not p.lemma)
    res = {r.name: r.status for r in k_induction(spec.ts, max_k=1)}
    assert "cti" in res.values()


def test_faithful_registry_keeps_one_handle_per_key() -> None:
    """The seed (1.0.2) keeps a pool's live entry through the unregister task: `is_registered`
    is exact, proved with every one of its quirks on; revision 403dd259 erases it (§6 #19)."""
    rep = prove("kvbm_block_registry", {}, faithful("kvbm_block_registry"), max_k=1)
    st = {r["invariant"]: r["status"] for r in rep["invariants"]}
    assert st["reg.one_registration_per_key"] == "proved" and st["reg.references_resolve"] == "proved"
    assert st["reg.pool_lists_iff_live"] == "proved"
    rep = prove("kvbm_block_registry", {}, revision("kvbm_block_registry", "403dd259").quirks, max_k=1)
    st = {r["invariant"]: r["status"] for r in rep["invariants"]}
    assert st["reg.one_registration_per_key"] == "proved" and st["reg.pool_lists_iff_live"] != "proved"


@pytest.mark.parametrize("cfg", list(G1_UNIVERSES.values()), ids=list(G1_UNIVERSES))
def test_prove_g1_native_ideal(cfg: dict[str, Any]) -> None:
    """Every invariant of the G1 facade with the native backend, and its three lemmas, by
    1-induction on the explorer's worlds."""
    rep = prove("g1_native", cfg, max_k=1)
    assert rep["all_proved"], [r for r in rep["invariants"] if r["status"] != "proved"]
    assert len(rep["invariants"]) == 14 and sum(bool(r.get("lemma")) for r in rep["invariants"]) == 3


def test_g1_without_its_lemmas_is_not_1_inductive() -> None:
    spec = make_spec("g1_native", {})
    spec.ts.properties = tuple(p for p in spec.ts.properties if not p.lemma)
    res = {r.name: r.status for r in k_induction(spec.ts, max_k=1)}
    assert res["g1.capacity"] == "cti" and res["g1.announced_matches_visible"] == "cti"


def test_faithful_g1_keeps_capacity_and_the_lru() -> None:
    """The seed (R05) publishes parents first: parent-before-child is proved with every one of its
    quirks on; revision 366ff0ef (the tail promoted first, §6 #18) breaks it."""
    rep = prove("g1_native", {}, faithful("g1_native"), max_k=1)
    st = {r["invariant"]: r["status"] for r in rep["invariants"]}
    assert st["g1.capacity"] == st["g1.lru_exactly_idle"] == st["g1.announced_matches_visible"] == "proved"
    assert st["g1.active_count_resident"] != "proved" and st["g1.stored_parent_announced"] == "proved"
    rep = prove("g1_native", {}, revision("g1_native", "366ff0ef").quirks, max_k=1)
    st = {r["invariant"]: r["status"] for r in rep["invariants"]}
    assert st["g1.capacity"] == "proved" and st["g1.stored_parent_announced"] != "proved"


@pytest.mark.parametrize("quirk", [q.name for q in quirks_of("g1_native") if q.name != "prefix_hit_first_copy_only"])
def test_g1_bmc_on_bit_vectors_agrees_with_integers(quirk: str) -> None:
    """``G1Spec.bounded`` (signed bit-vectors, what BMC runs) finds what the unbounded integer
    spec finds, at the same depth, for every quirk's invariants."""
    spec = make_spec("g1_native", {}, [quirk])
    d = 4
    bounded = spec.bounded(d)
    assert bounded.ts.width is not None and spec.ts.width is None
    props = list(QUIRKS[quirk].breaks)
    bv = {r.name: (r.status, r.k) for r in bmc(bounded.ts, d, properties=props)}
    ints = {r.name: (r.status, r.k) for r in bmc(spec.ts, d, properties=props)}
    assert bv == ints and all(st == "violated" for st, _ in bv.values())


def test_g1_bit_vector_width_covers_the_clock() -> None:
    """The only value that grows with depth, the stamp clock, stays below what ``bounded(d)``
    allows for: checked by BMC on the unbounded spec (faithful, so every quirk's paths count)."""
    spec = make_spec("g1_native", {}, faithful("g1_native"))
    d = 3
    w = spec.bounded(d).ts.width
    assert w is not None
    top = 2 ** (w - 1) - 1  # the largest signed value
    spec.ts.properties = (*spec.ts.properties, Property("tick_fits", lambda s: s["tick"] + 2 * spec.C <= top))
    (r,) = bmc(spec.ts, d, properties=["tick_fits"])
    assert r.status == "holds_to_depth" and r.k == d


def test_g1_spec_world_is_bounded() -> None:
    from kvmodel.model.errors import InvalidInput

    with pytest.raises(InvalidInput, match="one pushed token"):
        make_spec("g1_native", {"pushes": 2})
    with pytest.raises(InvalidInput, match="unknown g1_native spec parameters"):
        make_spec("g1_native", {"tokens": 3})


@pytest.mark.parametrize("component", LRUS)
def test_prove_lru_ideal_needs_its_lemmas(component: str) -> None:
    spec = make_spec(component, {})
    assert all(r.status == "proved" for r in k_induction(spec.ts, max_k=1))
    # Without the strengthening lemmas the LRU property is not inductive: a CTI.
    spec.ts.properties = tuple(p for p in spec.ts.properties if not p.lemma)
    res = {r.name: r.status for r in k_induction(spec.ts, max_k=1)}
    assert res["lru.evicts_least_recent"] == "cti"


def test_spec_lemmas_are_in_the_catalogue() -> None:
    from kvmodel.invariants import for_component

    for comp in ("kv_manager", *LRUS, "kvbm_block_registry", "g1_native", "g1_kvbm"):
        spec = make_spec(comp, {})
        cat = {i.name: i for i in for_component(comp)}
        for p in spec.ts.properties:
            assert p.name in cat, p.name
            assert cat[p.name].lemma == p.lemma


# --------------------------------------------------------------------------- BMC vs the explorer


def _bmc_entries() -> list[dict[str, Any]]:
    comps = ("kv_manager", *LRUS, "kvbm_block_registry", "g1_native")
    # g1: the faithful entry holds every quirk's breakage (each quirk alone runs in `kvmodel check`)
    chosen = [e for e in MANIFEST if e["expect"]["violations"] and e["component"] in comps]
    chosen = [e for e in chosen if e["component"] != "g1_native" or not e["name"].startswith("quirk-")]
    # a quirk the spec does not model (a query's) has no BMC counterpart
    return [
        e
        for e in chosen
        if components.get(e["component"]).modelled_quirks(e["quirks"]) == set(e["quirks"])
        or e["name"].startswith("faithful")
    ]


def _spec_config(e: dict[str, Any]) -> dict[str, Any]:
    return universe_of(e["component"], e["config"], e["space"])


@pytest.mark.parametrize("entry", _bmc_entries(), ids=lambda e: e["name"])
def test_bmc_finds_each_violation_at_the_explorers_minimal_depth(entry: dict[str, Any], tmp_path: Path) -> None:
    """Z3 BMC and BFS agree on which invariants break and at which depth; every BMC trace
    replays on the executable model (checked inside run_bmc)."""
    props = {p.name for p in make_spec(entry["component"], {}).ts.properties}
    want: dict[str, int] = {k: v for k, v in entry["expect"]["violations"].items() if k in props}
    rep = run_bmc(
        entry["component"], max(want.values()), _spec_config(entry), entry["quirks"], out=tmp_path, induction=True
    )
    got = {r["invariant"]: r["k"] for r in rep["invariants"] if r["status"] == "violated"}
    assert got == want
    assert len(list(tmp_path.glob("*.json"))) == len(want)


# --------------------------------------------------------------------------- agreement (executable -> spec)


KV_MOVES = [Process(m) for m in KvSpace(6, 1, 2, 2).actions()]
KV_SMALL_MOVES = [Process(m) for m in KvSpace(3, 2, 3, 2).actions()]


def _lru_moves(component: str) -> list[Any]:
    """The explorer world's moves as typed actions (a wall-clock insert by its tick)."""
    out: list[Any] = []
    for m in LruSpace(component, 3, 6).moves():
        if isinstance(m, Insert) and component == "lru_evictor_wallclock":
            out.append(InsertAfter(m.object, m.clock))
        else:
            out.append(m)
    out.append(Len())
    return out


def _mode_ids() -> list[tuple[str, tuple[str, ...]]]:
    out: list[tuple[str, tuple[str, ...]]] = [("ideal", ()), ("faithful", tuple(sorted(faithful("kv_manager"))))]
    out += [(q.name, with_requires(q.name)) for q in quirks_of("kv_manager")]
    return out


@pytest.mark.parametrize("name,quirks", _mode_ids(), ids=[m[0] for m in _mode_ids()])
def test_agreement_kv_manager_random_runs(name: str, quirks: tuple[str, ...]) -> None:
    cache: dict[str, Any] = {}
    for seed in range(3):
        n = agreement_run("kv_manager", {"max_capacity": 4}, quirks, steps=120, seed=seed, moves=KV_MOVES, cache=cache)
        assert n == 120
    cfg = {"max_capacity": 2, "n_full": 3, "partials": 2, "max_batch": 3, "channel": False}
    assert agreement_run("kv_manager", cfg, quirks, steps=150, seed=7, moves=KV_SMALL_MOVES) == 150


@pytest.mark.parametrize("component", LRUS)
def test_agreement_lru_random_runs(component: str) -> None:
    modes: list[tuple[str, ...]] = [()] + ([("equal_timestamp_stale_entry",)] if "wall" in component else [])
    for q in modes:
        for seed in range(3):
            cfg = (
                {"objects": 3} if "counter" in component else {"objects": 3, "cleanup_threshold": seed, "max_queue": 8}
            )
            assert agreement_run(component, cfg, q, steps=150, seed=seed, moves=_lru_moves(component)) == 150


KV_MODELLED = sorted(components.get("kv_manager").modelled_quirks(faithful("kv_manager")))


@pytest.mark.parametrize("quirk", [*KV_MODELLED, "equal_timestamp_stale_entry"])
def test_agreement_check_tells_each_quirk_apart(quirk: str) -> None:
    """A spec with one quirk more than the executable model is caught by the random-run check."""
    comp = QUIRKS[quirk].component
    if comp == "kv_manager":
        base = tuple(QUIRKS[quirk].requires)
        moves, cfg = KV_MOVES, {"max_capacity": 4}
    else:
        base, moves, cfg = (), _lru_moves(comp), {"objects": 3, "cleanup_threshold": 1}
    with pytest.raises(Disagreement):
        for seed in range(40):
            agreement_run(comp, cfg, base, spec_quirks=(*base, quirk), steps=60, seed=seed, moves=moves)


def _g1_modes() -> list[tuple[str, tuple[str, ...]]]:
    out: list[tuple[str, tuple[str, ...]]] = [("ideal", ()), ("faithful", tuple(sorted(faithful("g1_native"))))]
    return out + [(q.name, (q.name,)) for q in quirks_of("g1_native")]


@pytest.mark.parametrize("name,quirks", _g1_modes(), ids=[m[0] for m in _g1_modes()])
def test_agreement_g1_random_runs(name: str, quirks: tuple[str, ...]) -> None:
    """Executable -> spec: every step of random runs is the spec's operation and leads to the
    same observations (result, events, every invariant's verdict, the state up to copy identity)."""
    assert trace_agreement({}, quirks, runs=2, steps=30, seed=11) == 60
    if name in ("ideal", "faithful"):
        assert trace_agreement({"prompts": 3, "decode": 0}, quirks, runs=2, steps=30, seed=12) == 60


@pytest.mark.parametrize("quirk", [q.name for q in quirks_of("g1_native")])
def test_g1_agreement_tells_each_quirk_apart(quirk: str) -> None:
    """The explorer's shortest counterexample of a quirk agrees with the spec that has the quirk
    and is refused by the spec without it (and the other way round)."""
    from kvmodel.components.g1_native.space import G1Space
    from kvmodel.explorer import explore, violation_trace

    (inv,) = QUIRKS[quirk].breaks
    res = explore({}, (quirk,), G1Space(owners=2, prompts=2, pushes=1, decode=1), stop_on_violation=True)
    ops = [(s["op"], s["args"]) for s in violation_trace(res, inv)["steps"]]
    assert trace_agreement({}, (quirk,), moves=ops, runs=1, steps=0, seed=0) == len(ops)
    with pytest.raises(Disagreement):
        trace_agreement({}, (), spec_quirks=(quirk,), moves=ops, runs=1, steps=0, seed=0)
    with pytest.raises(Disagreement):
        trace_agreement({}, (quirk,), spec_quirks=(), moves=ops, runs=1, steps=0, seed=0)


# --------------------------------------------------------------------------- CLI


def _kv(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kvmodel.cli", *args], capture_output=True, text=True, timeout=600)


def test_cli_prove_exit_codes_and_json() -> None:
    ok = _kv("prove", "--component", "kv_manager", "--json")
    assert ok.returncode == 0, ok.stderr
    rep = json.loads(ok.stdout)
    assert {r["status"] for r in rep["invariants"]} == {"proved"}
    assert all({"invariant", "status", "k", "seconds"} <= set(r) for r in rep["invariants"])
    bad = _kv("prove", "--component", "kv_manager", "--faithful", "--max-k", "1", "--json")
    # counterexamples to 1-induction and no violation: nothing decided, exit 3 (never 0 or 1)
    rep = json.loads(bad.stdout)
    assert "inconclusive" in {r["status"] for r in rep["invariants"]}
    assert bad.returncode == {"violation": 1, "inconclusive": 3}[rep["verdict"]]
    assert _kv("prove", "--component", "nope").returncode == 2


def test_cli_bmc_writes_traces_that_replay(tmp_path: Path) -> None:
    out = tmp_path / "t"
    r = _kv("bmc", "--component", "kv_manager", "--faithful", "--depth", "8", "--out", str(out), "--json")
    assert r.returncode == 1, r.stderr
    rep = json.loads(r.stdout)
    violated = [x for x in rep["invariants"] if x["status"] == "violated"]
    props = {p.name for p in make_spec("kv_manager", {}).ts.properties}
    want = breakable("kv_manager", KV_MODELLED) & props  # every breakable invariant the spec models
    assert {x["invariant"] for x in violated} == want and len(list(out.glob("*.json"))) == len(want)
    for x in violated:
        rr = _kv("replay", x["trace"], "--json")
        assert rr.returncode == 1  # a violation is reported ...
        res = json.loads(rr.stdout)
        assert res["reproduces_recorded_violation"] and res["divergence"] is None  # ... the recorded one
        assert res["recorded_violation"]["invariant"] == x["invariant"]
        assert res["recorded_violation"]["step"] == x["k"] - 1


def test_cli_bmc_ideal_lru_no_violation(tmp_path: Path) -> None:
    r = _kv("bmc", "--component", "lru_evictor_wallclock", "--ideal", "--depth", "4", "--no-induction", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["invariants"]
    assert {x["status"] for x in rows} == {"holds"} and all(x["bounded"] == 4 for x in rows)
