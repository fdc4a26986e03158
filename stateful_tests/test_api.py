"""The public API for users' own implementations: `kvmodel.api.check_implementation` and the
pytest plugin's `kvmodel_check` fixture, on the worked example of docs/api.md."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kvmodel import api, cli, show, traces
from kvmodel.model.errors import InvalidInput

ROOT = Path(__file__).resolve().parents[1]


def _example(name: str = "my_kv_manager") -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


EX = _example()


def test_a_correct_implementation_passes_and_the_check_is_deterministic() -> None:
    a = api.check_implementation(EX.MyAdapter(), "kv_manager", workloads=150, seed=3)
    b = api.check_implementation(EX.MyAdapter(), "kv_manager", workloads=150, seed=3)
    assert a.ok and a.workloads == 150 and a.steps > 500
    assert a.to_json() | {"seconds": 0} == b.to_json() | {"seconds": 0}


@pytest.mark.parametrize("bug", sorted(EX.BUGS))
def test_each_seeded_bug_gives_a_short_counterexample_that_replays(bug: str, tmp_path: Path) -> None:
    """Every planted bug is caught at the default settings (benchmarks/planted_bugs.py measures)."""
    rep = api.check_implementation(EX.MyAdapter(bug), "kv_manager")
    assert not rep.ok and rep.divergence is not None and rep.ops is not None
    assert len(rep.ops) <= 8 and rep.divergence.step == len(rep.ops) - 1
    # 1-minimal: dropping any step makes the divergence go away (or the workload invalid)
    for i in range(len(rep.ops)):
        cand = rep.ops[:i] + rep.ops[i + 1 :]
        try:
            d, _ = api.differential(EX.MyAdapter(bug), "kv_manager", rep.config, rep.quirks, cand)
        except InvalidInput:  # the shorter list is not a valid workload
            continue
        assert d is None or d.step < i
    # the trace is the model's run: it replays exactly, and `kvmodel show` marks the step
    p = rep.write_trace(tmp_path / "t.json")
    assert p is not None
    t = traces.load(p)
    r = traces.replay(t)
    assert r.divergence is None and r.steps_run == len(rep.ops)
    page = show.page(t)
    assert f'<g id="step-{rep.divergence.step}" class="col violation">' in page
    assert cli.main(["replay", str(p)]) == 0


class _WrongAtThreeBlocks:
    """The worked example, wrong from the step at which three distinct blocks have been Used."""

    name = "wrong-at-three-blocks"

    def __init__(self) -> None:
        self.inner = EX.MyAdapter()
        self.seen: set[str] = set()

    def reset(self, config: dict[str, object]) -> None:
        self.seen = set()
        self.inner.reset(config)

    def step(self, op: str, args: object) -> dict[str, object]:
        out = dict(self.inner.step(op, args))
        if op == "process" and isinstance(args, dict) and "Use" in args:
            self.seen |= {str(b) for b in args["Use"]}
            if len(self.seen) >= 3 and "error" not in out:
                out["returns"] = "wrong"
        return out


def test_the_differential_minimizer_merges_steps_where_the_component_says_how(monkeypatch: pytest.MonkeyPatch) -> None:
    """A divergence that needs three blocks Used comes out as one Use where two Uses merge into
    one (the KV manager's ``merge_steps``), never longer than without merging."""
    import kvmodel.conformance.differential as differential

    merged = [api.check_implementation(_WrongAtThreeBlocks(), "kv_manager", seed=s).ops for s in range(4)]
    monkeypatch.setattr(differential, "_merge_of", lambda component: None)
    plain = [api.check_implementation(_WrongAtThreeBlocks(), "kv_manager", seed=s).ops for s in range(4)]
    assert all(m is not None and p is not None and len(m) <= len(p) for m, p in zip(merged, plain, strict=True))
    assert merged[0] is not None and plain[0] is not None and len(merged[0]) == 1 < len(plain[0])


LRU = _example("my_lru")


@pytest.mark.parametrize("component", ["lru_evictor_counter", "lru_evictor_wallclock"])
def test_the_lru_example_conforms(component: str) -> None:
    assert api.check_implementation(LRU.MyLruAdapter(), component).ok


@pytest.mark.parametrize("bug", sorted(LRU.BUGS))
def test_each_bug_planted_in_the_lru_example_is_caught_at_default_settings(bug: str) -> None:
    for component in ("lru_evictor_counter", "lru_evictor_wallclock"):
        if bug == "push_front_to_back" and component == "lru_evictor_wallclock":
            continue  # no push_front there
        rep = api.check_implementation(LRU.MyLruAdapter(bug), component)
        assert not rep.ok and rep.ops is not None and len(rep.ops) <= 6, (component, rep.explain())


REG = _example("my_registry")


def test_the_registry_example_conforms() -> None:
    rep = api.check_implementation(REG.MyRegistryAdapter(), "kvbm_block_registry")
    assert rep.ok, rep.explain()
    assert set(api.operations("kvbm_block_registry")) <= set(rep.op_counts)


# the cheaper half of the registry's planted bugs (benchmarks/planted_bugs.py checks all ten)
@pytest.mark.parametrize(
    "bug", ["take_handle_forgets", "add_tokens_returns_count", "pop_tokens_what_it_can", "drop_publisher_silently"]
)
def test_bugs_planted_in_the_registry_example_are_caught_at_default_settings(bug: str) -> None:
    rep = api.check_implementation(REG.MyRegistryAdapter(bug), "kvbm_block_registry")
    assert not rep.ok and rep.ops is not None and rep.trace is not None
    assert traces.replay(rep.trace).divergence is None


G1 = _example("my_g1_native")


def test_the_g1_native_example_conforms_to_the_ideal_model_and_not_the_faithful_one() -> None:
    rep = api.check_implementation(G1.MyG1NativeAdapter(), "g1_native")
    assert rep.ok, rep.explain()
    assert set(api.operations("g1_native")) <= set(rep.op_counts)
    # the example is ideal: against the seed's revision it must diverge (a quirk it lacks)
    assert not api.check_implementation(G1.MyG1NativeAdapter(), "g1_native", quirks="faithful").ok


# the cheaper third of the G1 example's planted bugs (benchmarks/planted_bugs.py checks all twelve)
@pytest.mark.parametrize(
    "bug",
    ["group_parent_of_last", "active_counts_reserved", "transfer_counts_whole_blocks", "local_hash_counts_fresh_only"],
)
def test_bugs_planted_in_the_g1_native_example_are_caught_at_default_settings(bug: str) -> None:
    rep = api.check_implementation(G1.MyG1NativeAdapter(bug), "g1_native")
    assert not rep.ok and rep.ops is not None and rep.trace is not None
    assert traces.replay(rep.trace).divergence is None


def test_errors_are_matched_by_type_or_panic_message() -> None:
    class Adapter:
        name = "by message"

        def __init__(self) -> None:
            self.inner = EX.MyAdapter()

        def reset(self, config: dict) -> None:  # type: ignore[type-arg]
            self.inner.reset(config)

        def step(self, op: str, args: object) -> dict:  # type: ignore[type-arg]
            out = self.inner.step(op, args)
            if "error" in out:
                out["error"] = api.error_names()[out["error"]]
            return out

    assert api.check_implementation(Adapter(), workloads=100).ok


def test_an_implementation_that_crashes_is_a_divergence_not_a_crash() -> None:
    class Crashing:
        name = "crashes on Promote"

        def __init__(self) -> None:
            self.inner = EX.MyAdapter()

        def reset(self, config: dict) -> None:  # type: ignore[type-arg]
            self.inner.reset(config)

        def step(self, op: str, args: object) -> dict:  # type: ignore[type-arg]
            if isinstance(args, dict) and "Promote" in args:
                raise KeyError("boom")
            return self.inner.step(op, args)  # type: ignore[no-any-return]

    rep = api.check_implementation(Crashing(), workloads=300)
    assert rep.divergence is not None and rep.divergence.what == "exception"
    assert "boom" in str(rep.divergence.implementation) and rep.ops is not None
    assert "Promote" in rep.ops[-1][1]


def test_the_lru_evictors_can_be_checked_too() -> None:
    from collections import OrderedDict

    class MyLru:
        name = "OrderedDict LRU"

        def reset(self, config: dict) -> None:  # type: ignore[type-arg]
            self.d: OrderedDict[int, None] = OrderedDict()

        def step(self, op: str, args: dict) -> dict:  # type: ignore[type-arg]
            if op == "insert":
                self.d.pop(args["object"], None)
                self.d[args["object"]] = None
                return {"returns": None, "events": []}
            if op == "remove":
                return {"returns": self.d.pop(args["object"], 0) is None, "events": []}
            if op == "evict":
                return {"returns": self.d.popitem(last=False)[0] if self.d else None, "events": []}
            if op == "push_front":
                self.d[args["object"]] = None
                self.d.move_to_end(args["object"], last=False)
                return {"returns": None, "events": []}
            return {"returns": len(self.d), "events": []}

    rep = api.check_implementation(MyLru(), "lru_evictor_counter", workloads=200)
    assert rep.ok, rep.explain()


def test_the_pytest_fixture_passes_a_correct_pool_and_fails_a_buggy_one(tmp_path: Path) -> None:
    (tmp_path / "test_mine.py").write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(ROOT / "examples")!r})
            from my_kv_manager import MyAdapter

            def test_good(kvmodel_check):
                assert kvmodel_check(MyAdapter()).ok

            def test_buggy(kvmodel_check):
                kvmodel_check(MyAdapter("no_rollback_on_full"))
            """
        )
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--kvmodel-workloads",
            "150",
            "--kvmodel-traces",
            str(tmp_path / "traces"),
            str(tmp_path / "test_mine.py"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout
    assert "diverges from the kv_manager model" in done.stdout and "kvmodel show" in done.stdout
    written = list((tmp_path / "traces").glob("*.json"))
    assert [p.name for p in written] == ["test_buggy.json"]
    assert traces.replay(traces.load(written[0])).divergence is None


def test_an_adapter_may_declare_the_operations_it_implements() -> None:
    """Issue 58: an adapter written against an earlier contract (here: the KV manager without its
    queries) declares what it implements; nothing else is drawn, and the report lists what the
    run left unexercised."""
    from kvmodel.api import ModelAdapter, check_implementation

    class Old(ModelAdapter):
        operations = ("process", "num_active_blocks")

        def step(self, op: str, args: Any) -> dict[str, Any]:
            if op not in self.operations:
                return {"error": "unsupported op", "events": []}
            return super().step(op, args)

    rep = check_implementation(Old("kv_manager"), "kv_manager", workloads=30)
    assert rep.ok and {k.split(":")[0] for k in rep.op_counts} == {"process", "num_active_blocks"}
    assert "get_prefill_cost" in rep.extra["operations_not_exercised"]
    with pytest.raises(ValueError, match="not an operation"):
        check_implementation(type("Bad", (Old,), {"operations": ("nope",)})("kv_manager"), "kv_manager")


@pytest.mark.parametrize("component", ["kv_manager", "g1_kvbm", "lru_evictor_counter"])
def test_a_default_run_reports_the_branch_coverage_of_the_models_operations(component: str) -> None:
    """Issue 58: ``report.coverage`` (in ``to_json`` too) gives the branches of the component's model
    modules a run took, per module; a run with fewer workloads reaches no more of them than a
    longer one; ``coverage=False`` measures nothing."""
    from kvmodel.reach import model_files

    short = api.check_implementation(api.ModelAdapter(component), component, workloads=3)
    full = api.check_implementation(api.ModelAdapter(component), component, workloads=60)
    for rep in (short, full):
        cov = rep.to_json()["coverage"]
        assert rep.ok and cov is not None
        assert 0 < cov["taken"] <= cov["branches"]
        assert set(cov["modules"]) == {
            "kvmodel.model." + p.split("/model/", 1)[1][: -len(".py")].replace("/", ".") for p in model_files(component)
        }
    assert short.extra["coverage"]["taken"] <= full.extra["coverage"]["taken"]
    assert "branch coverage of the model" in full.explain()
    off = api.check_implementation(api.ModelAdapter(component), component, workloads=3, coverage=False)
    assert off.extra["coverage"] is None
