"""The language-neutral harness (``kvmodel conform --target exec``): a C implementation built with
the machine's compiler and a Python adapter served as a process are checked like any other
target; a crash, a malformed line and a hang are divergences of their own kind with the child's
standard error; a program that cannot start or does not say hello is an error, not a verdict."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvmodel import api, harness, traces

from .conftest import ROOT, require

KVMODEL = [sys.executable, "-m", "kvmodel.cli"]
SERVE = [sys.executable, "-m", "kvmodel.harness"]


def conform(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KVMODEL, "conform", "--target", "exec", *args], capture_output=True, text=True, timeout=600, cwd=cwd
    )


@pytest.fixture(scope="module")
def lru_c(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cc = shutil.which("gcc") or shutil.which("cc")
    require(cc is not None, "no C compiler (gcc) on this machine")
    out = tmp_path_factory.mktemp("c") / "lru_counter"
    subprocess.run(
        [cc, "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(out), str(ROOT / "examples/harness/lru_counter.c")],
        check=True,
    )
    return out


def test_the_c_evictor_conforms(lru_c: Path, tmp_path: Path) -> None:
    p = conform("--component", "lru_evictor_counter", "--json", "--out", str(tmp_path), "--", str(lru_c))
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["verdict"] == "pass" and rep["first_divergence"] is None and rep["implementation"] == "lru_counter.c"
    assert rep["steps"] > 1000 and set(rep["op_counts"]) == set(api.operations("lru_evictor_counter"))


def test_a_bug_planted_in_the_c_evictor_is_shrunk_and_replays(lru_c: Path, tmp_path: Path) -> None:
    p = conform(
        "--component",
        "lru_evictor_counter",
        "--json",
        "--out",
        str(tmp_path),
        "--",
        str(lru_c),
        "--bug",
        "evict_newest",
    )
    assert p.returncode == 1, p.stderr
    rep = json.loads(p.stdout)
    assert (
        rep["verdict"] == "violation"
        and rep["first_divergence"]["op"] == "evict"
        and rep["first_divergence"]["what"] == "returns"
    )
    assert len(rep["counterexample"]) <= 4  # two objects in, one evicted
    trace = traces.load(rep["trace"])
    r = traces.replay(trace)
    assert r.divergence is None and r.steps_run == len(rep["counterexample"])


def test_a_python_adapter_served_as_a_harness(tmp_path: Path) -> None:
    ex = str(ROOT / "examples/my_kv_manager.py") + ":MyAdapter"
    good = conform("--component", "kv_manager", "--workloads", "60", "--json", "--", *SERVE, "--adapter", ex)
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout)["verdict"] == "pass"
    bad = conform(
        "--component", "kv_manager", "--workloads", "150", "--json", "--out", str(tmp_path), "--",
        *SERVE, "--adapter", ex, "--kwargs", '{"bug": "destroy_drops_all_references"}',
    )  # fmt: skip
    assert bad.returncode == 1, bad.stderr
    rep = json.loads(bad.stdout)
    assert rep["first_divergence"] is not None and len(rep["counterexample"]) <= 3
    again = conform(
        "--component", "kv_manager", "--workloads", "150", "--json", "--out", str(tmp_path), "--",
        *SERVE, "--adapter", ex, "--kwargs", '{"bug": "destroy_drops_all_references"}',
    )  # fmt: skip
    same = json.loads(again.stdout)
    rep.pop("seconds"), same.pop("seconds")
    assert same == rep  # deterministic for a seed


MISBEHAVING = """
import os, sys, time
from kvmodel import api, harness

class Bad(api.ModelAdapter):
    def __init__(self, how):
        super().__init__("lru_evictor_counter")
        self.how, self.n = how, 0
    def step(self, op, args):
        if op == "evict":
            self.n += 1
            if self.n >= 3:
                if self.how == "crash":
                    print("evictor: segfault in evict", file=sys.stderr, flush=True)
                    os._exit(139)
                if self.how == "hang":
                    time.sleep(60)
                if self.how == "garbage":
                    return "not an observation"
                if self.how == "both":
                    return {"returns": None, "error": "x"}
        return super().step(op, args)

sys.exit(harness.serve(Bad(sys.argv[1])))
"""


@pytest.mark.parametrize(
    ("how", "kind", "stderr"),
    [
        ("crash", "crash", "segfault in evict"),
        ("hang", "timeout", ""),
        ("garbage", "malformed", ""),
        ("both", "malformed", ""),
    ],
)
def test_a_misbehaving_child_is_a_divergence_of_its_own_kind(how: str, kind: str, stderr: str, tmp_path: Path) -> None:
    script = tmp_path / "bad.py"
    script.write_text(textwrap.dedent(MISBEHAVING))
    p = conform(
        "--component", "lru_evictor_counter", "--workloads", "30", "--step-timeout", "1", "--json", "--",
        sys.executable, str(script), how,
    )  # fmt: skip
    assert p.returncode == 1, p.stderr
    rep = json.loads(p.stdout)
    d = rep["first_divergence"]
    assert d["what"] == kind and stderr in d["implementation"], d
    if how == "hang":  # a child that hung once is not asked again (issue 57): reported as first seen
        assert rep["restarts"] == 0 and rep["shrink_runs"] == 0
        assert sum(1 for op, _ in rep["counterexample"] if op == "evict") >= 3
        return
    assert rep["restarts"] >= 1  # the child was restarted after each failure
    assert sum(1 for op, _ in rep["counterexample"] if op == "evict") == 3  # shrunk to the third evict


def test_a_program_that_does_not_start_or_greet_is_an_error(tmp_path: Path) -> None:
    p = conform("--component", "lru_evictor_counter", "--", str(tmp_path / "nope"))
    assert p.returncode == 2 and p.stdout == "" and len(p.stderr.strip().splitlines()) == 1
    assert "cannot start" in p.stderr
    p = conform("--component", "lru_evictor_counter", "--", sys.executable, "-c", "print('hi')")
    assert p.returncode == 2 and "did not answer hello" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = conform("--component", "lru_evictor_counter", "--", sys.executable, "-c", 'print(\'{"type":"hello"}\')')
    assert p.returncode == 2 and "answered hello" in p.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--component", "lru_evictor_counter"],  # no program
        ["--", "true"],  # no component
        ["--component", "nope", "--", "true"],
        ["--component", "kv_manager", "--quirks", "no_such_quirk", "--", "true"],
        ["--component", "kv_manager", "--quirks", "faithful", "--revision", "x", "--", "true"],
    ],
)
def test_bad_arguments_are_one_line(args: list[str]) -> None:
    p = conform(*args)
    assert p.returncode == 2 and p.stdout == "" and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_a_response_line_without_end_cannot_exhaust_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(harness, "MAX_LINE", 1 << 12)
    a = harness.ExecAdapter(
        [
            sys.executable,
            "-c",
            textwrap.dedent("""
            import sys
            sys.stdin.readline(); print('{"type":"hello","protocol":"kvmodel-harness/1","name":"x"}', flush=True)
            sys.stdin.readline(); print('{"ok":true}', flush=True)
            sys.stdin.readline(); sys.stdout.write("x" * 100000); sys.stdout.flush()
            import time; time.sleep(30)
        """),
        ],
        step_timeout=20,
    )
    a.reset({})
    with pytest.raises(harness.HarnessFailure) as e:
        a.step("len", {})
    assert e.value.divergence_kind == "malformed"
    a.close()


def test_the_faithful_model_served_over_the_harness_matches_itself() -> None:
    a = harness.ExecAdapter([*SERVE, "--component", "kvbm_block_registry", "--quirks", "faithful"])
    try:
        a.start()
        rep = api.check_implementation(a, "kvbm_block_registry", quirks="faithful", workloads=40, step_timeout=None)
    finally:
        a.close()
    assert rep.ok, rep.explain()


# ----------------------------------------------------------------------------- the schema

jsonschema = pytest.importorskip("jsonschema")


def _validator(ref: str) -> Any:
    doc = harness.schema()
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{ref}", "$defs": doc["$defs"]})


def test_the_schema_is_valid_and_covers_every_message() -> None:
    jsonschema.Draft202012Validator.check_schema(harness.schema())
    req, resp = _validator("request"), _validator("response")
    for m in (
        {"type": "hello", "protocol": harness.PROTOCOL},
        {"type": "reset", "config": {"max_capacity": 4}},
        {"type": "step", "op": "process", "args": {"Use": [{"F": 0}]}},
        {"type": "bye"},
    ):
        assert req.is_valid(m), m
    for m in (
        {"type": "hello", "protocol": harness.PROTOCOL, "name": "x"},
        {"ok": True},
        {"returns": None, "events": []},
        {"error": "DestroyNotActive", "events": [{"Remove": {"blocks": [1]}}]},
    ):
        assert resp.is_valid(m), m


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
responses = st.dictionaries(st.sampled_from(["returns", "error", "events", "extra"]), json_values, max_size=3)


@settings(max_examples=300, deadline=None)
@given(st.one_of(responses, json_values))
def test_the_client_accepts_exactly_the_step_responses_of_the_schema(msg: Any) -> None:
    assert (harness.check_response(msg) is None) == _validator("step_response").is_valid(msg)


def test_invariant_mode_through_the_harness(lru_c: Path, tmp_path: Path) -> None:
    """``--check invariants`` over the harness: the correct C evictor passes and its planted bug
    breaks the LRU invariant (no reference revision); a served implementation of another
    revision passes invariant mode and fails equality; the report lists what was checked."""
    good = conform("--component", "lru_evictor_counter", "--check", "invariants", "--json", "--", str(lru_c))
    assert good.returncode == 0, good.stderr
    rep = json.loads(good.stdout)
    assert rep["check"] == "invariants" and "lru.evicts_least_recent" in rep["invariants"]["checked"]
    bad = conform(
        "--component", "lru_evictor_counter", "--check", "invariants", "--json", "--out", str(tmp_path),
        "--", str(lru_c), "--bug", "evict_newest",
    )  # fmt: skip
    assert bad.returncode == 1, bad.stderr
    d = json.loads(bad.stdout)["first_divergence"]
    assert d["what"] == "invariant" and d["model"]["invariant"] == "lru.evicts_least_recent"
    other = str(ROOT / "stateful_tests/other_revisions.py") + ":KvManagerPromoteFixed"
    args = ["--component", "kv_manager", "--workloads", "60", "--json"]
    inv = conform(*args, "--check", "invariants", "--", *SERVE, "--adapter", other)
    assert inv.returncode == 0, inv.stderr
    eq = conform(*args, "--", *SERVE, "--adapter", other)
    assert eq.returncode == 1 and json.loads(eq.stdout)["first_divergence"]["what"] == "events"
    refused = conform("--component", "kv_manager", "--accept", "faithful", "--", *SERVE, "--adapter", other)
    assert refused.returncode == 2 and "--accept goes with" in refused.stderr
