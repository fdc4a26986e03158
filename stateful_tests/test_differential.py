"""The one conformance contract (kvmodel/conformance/differential.py): the stepper, the runner,
the minimizer and the report, on toy adapters whose divergences are known in advance."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kvmodel.conformance import differential as df


class Counter:
    """A counter: ``add`` n returns the new total; ``bug_at``: from that total on, ``add`` returns
    one more than it should (a divergence reachable only after enough steps)."""

    def __init__(self, bug_at: int | None = None, name: str = "counter") -> None:
        self.bug_at, self.name, self.total = bug_at, name, 0

    def reset(self, config: dict[str, Any]) -> None:
        self.total = int(config.get("start", 0))

    def step(self, op: str, args: Any) -> dict[str, Any]:
        if op != "add":
            raise ValueError(f"unknown operation {op}")
        self.total += int(args["n"])
        off = 1 if self.bug_at is not None and self.total >= self.bug_at else 0
        return {"returns": self.total + off}


CMP = df.in_order(["returns"])
ADDS = st.lists(st.integers(0, 3).map(lambda n: ("add", {"n": n})), max_size=12)


def test_the_stepper_reports_the_first_differing_step() -> None:
    steps = [("add", {"n": 2}), ("add", {"n": 2}), ("add", {"n": 2})]
    d, n = df.differential(Counter(), Counter(bug_at=4), {}, steps, CMP)
    assert d is not None and n == 2 and d.step == 1 and d.what == "returns"
    assert (d.model, d.implementation) == (4, 5)
    assert df.differential(Counter(), Counter(bug_at=7), {}, steps, CMP) == (None, 3)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 9), st.integers(0, 3))
def test_the_runner_finds_and_shrinks_to_a_minimal_list(bug_at: int, seed: int) -> None:
    """Every divergence needs a total of ``bug_at``: the shrunk list reaches it, and dropping any
    step loses it (1-minimal)."""
    rep = df.Report("counter", "toy", seed=seed)
    strategy = st.lists(st.integers(1, 3), min_size=1, max_size=10)
    df.run(
        Counter(),
        Counter(bug_at=bug_at),
        rep,
        strategy=strategy,
        case=lambda ns: ({}, [("add", {"n": n}) for n in ns]),
        compare=CMP,
        workloads=200,
    )
    if rep.divergence is None:  # 200 lists of up to 10 adds of 1..3 reach 9 with near certainty
        assert rep.verdict == "pass" and rep.steps > 0
        return
    ops = rep.ops
    assert ops is not None and rep.verdict == "violation" and not rep.flaky
    assert sum(a["n"] for _, a in ops) >= bug_at and rep.divergence.step == len(ops) - 1
    for i in range(len(ops)):
        cand = ops[:i] + ops[i + 1 :]
        assert df.differential(Counter(), Counter(bug_at=bug_at), {}, cand, CMP)[0] is None
    j = json.loads(json.dumps(rep.to_json()))
    assert j["verdict"] == "violation" and j["divergences"] == 1
    assert j["counterexample"] == [list(o) for o in ops] and j["first_divergence"]["step"] == len(ops) - 1


@settings(max_examples=20, deadline=None)
@given(ADDS)
def test_the_same_implementation_never_diverges_and_counts_what_ran(steps: list[tuple[str, Any]]) -> None:
    d, n = df.differential(Counter(), Counter(), {"start": 5}, steps, CMP)
    assert d is None and n == len(steps)


def test_a_run_that_compares_nothing_is_inconclusive() -> None:
    rep = df.run(
        Counter(),
        Counter(bug_at=0),
        df.Report("counter", "toy"),
        strategy=st.integers(0, 1000),
        case=lambda _: ({}, []),
        compare=CMP,
        workloads=5,
    )
    assert rep.workloads == 5 and rep.steps == 0
    assert rep.verdict == "inconclusive" and rep.to_json()["verdict"] == "inconclusive"


class Raising(Counter):
    def step(self, op: str, args: Any) -> dict[str, Any]:
        if args["n"] == 3:
            raise RuntimeError("boom")
        return super().step(op, args)


def test_an_implementation_that_raises_is_a_divergence_not_a_crash() -> None:
    d, n = df.differential(Counter(), Raising(), {}, [("add", {"n": 1}), ("add", {"n": 3})], CMP)
    assert d is not None and d.what == "exception" and d.step == 1 and n == 2
    assert "boom" in d.implementation and d.model == 4


class Flaky(Counter):
    """Diverges on its first run only: the divergence cannot be reproduced."""

    runs = 0

    def reset(self, config: dict[str, Any]) -> None:
        super().reset(config)
        Flaky.runs += 1
        self.bug_at = 1 if Flaky.runs == 1 else None


def test_a_divergence_that_does_not_reproduce_is_flaky_and_not_ok() -> None:
    Flaky.runs = 0
    rep = df.run(
        Counter(),
        Flaky(),
        df.Report("flaky", "toy"),
        strategy=st.lists(st.integers(1, 2), min_size=1, max_size=3),
        case=lambda ns: ({}, [("add", {"n": n}) for n in ns]),
        compare=CMP,
        workloads=10,
    )
    assert rep.flaky and not rep.ok and rep.verdict == "violation" and rep.ops is not None


class Sampler:
    """An implementation that makes a choice (it 'samples' a value from its config's seed)."""

    name = "sampler"

    def reset(self, config: dict[str, Any]) -> None:
        self.x = int(config["seed"]) * 7 % 5

    def step(self, op: str, args: Any) -> dict[str, Any]:
        self.x = (self.x * 3 + 1) % 11
        return {"sampled": self.x, "returns": self.x + int(args["n"])}


class GivenModel:
    """A model that cannot predict the sample: it takes it from the implementation's answer."""

    name = "model"

    def reset(self, config: dict[str, Any]) -> None:
        self.seen: list[int] = []

    def given(self, observation: dict[str, Any]) -> None:
        self.seen.append(observation["sampled"])

    def step(self, op: str, args: Any) -> dict[str, Any]:
        return {"sampled": self.seen[-1], "returns": self.seen[-1] + int(args["n"])}


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 50), ADDS)
def test_a_model_with_given_steps_after_the_implementation(seed: int, steps: list[tuple[str, Any]]) -> None:
    d, n = df.differential(GivenModel(), Sampler(), {"seed": seed}, steps, df.in_order(["sampled", "returns"]))
    assert d is None and n == len(steps)


ODD = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(-(2**80), 2**80),
        st.text(max_size=5),
        st.builds(set, st.lists(st.integers(), max_size=3)),
    ),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=60, deadline=None)
@given(ODD, ODD)
def test_a_divergence_is_strict_json_whatever_the_adapter_returned(model: Any, got: Any) -> None:
    """NaN, infinities, huge integers, sets: a report stays printable as strict JSON."""
    d = df.Divergence(0, "op", {"n": 1}, "returns", model, got)
    json.dumps(d.to_json(), allow_nan=False)
    str(d)


def test_a_huge_or_deep_answer_is_bounded_in_the_report() -> None:
    deep: Any = 0
    for _ in range(100):
        deep = [deep]
    d = df.Divergence(0, "op", {}, "returns", list(range(5000)), deep)
    assert len(d.model) == 1000
    assert "<nested too deeply>" in json.dumps(d.implementation)
