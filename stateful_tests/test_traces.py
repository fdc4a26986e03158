"""Trace format v1: schema, record/replay round trip, divergence detection, bad files, CLI."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvmodel import cli, traces
from kvmodel.model.quirks import faithful as faithful_quirks

OPS: list[tuple[str, Any]] = [
    ("process", {"Use": [{"F": 1}, {"F": 2}, {"P": "a"}]}),
    ("process", {"Promote": {"uuid": "a", "hash": 3, "parent_hash": 2}}),
    ("process", {"Deref": [{"F": 1}, {"F": 2}, {"F": 3}]}),
    ("process", {"Use": [{"F": 7}, {"F": 8}, {"F": 9}]}),
    ("probe_new_blocks", {"blocks": [{"F": 1}, {"F": 7}]}),
    ("process", {"Destroy": [{"F": 4}]}),
    ("current_capacity", {}),
]


def _trace(quirks: list[str] | None = None) -> dict[str, Any]:
    return traces.record("kv_manager", {"max_capacity": 4}, quirks or [], OPS, stop_at_violation=False)


def test_recorded_trace_matches_schema_and_replays() -> None:
    t = _trace()
    assert traces.validate(t) is None
    r = traces.replay(t)
    assert r.divergence is None and r.violation is None and r.steps_run == len(OPS)
    # eviction Removes come before the Use's Store, in order
    ev = t["steps"][3]["observe"]["events"]
    assert [next(iter(e)) for e in ev] == ["Remove", "Remove", "Store"]
    assert t["steps"][5]["observe"]["error"]["id"] == "called `Option::unwrap()` on a `None` value"


def test_tampered_observation_is_a_divergence_at_that_step() -> None:
    t = _trace()
    t2 = copy.deepcopy(t)
    t2["steps"][3]["observe"]["events"][0]["Remove"]["blocks"] = [2]
    r = traces.replay(t2)
    assert r.divergence_step == 3 and "events" in (r.divergence or "")
    t3 = copy.deepcopy(t)
    t3["steps"][4]["observe"]["returns"] += 1
    assert traces.replay(t3).divergence_step == 4
    t4 = copy.deepcopy(t)
    t4["steps"][5]["observe"] = {"returns": True, "events": []}
    assert traces.replay(t4).divergence_step == 5


def test_faithful_quirks_change_what_replays() -> None:
    """A trace recorded on the ideal model diverges when replayed as faithful, and vice versa."""
    t = _trace()
    faithful = copy.deepcopy(t)
    faithful["quirks"] = ["promote_parent_unchecked", "deref_ignores_unknown", "store_parent_last_hit"]
    assert traces.replay(faithful).divergence is None  # none of these fire on OPS
    faithful["quirks"] = ["destroy_ignores_refcount", "destroy_mutates_before_panic"]
    assert traces.replay(faithful).divergence is None


@given(st.lists(st.sampled_from(OPS), max_size=12))
def test_record_then_replay_is_identity(ops: list[tuple[str, Any]]) -> None:
    for quirks in ([], sorted(__import__("kvmodel.model.quirks", fromlist=["faithful"]).faithful("kv_manager"))):
        t = traces.record("kv_manager", {"max_capacity": 3}, quirks, ops, stop_at_violation=False)
        assert traces.dumps(json.loads(traces.dumps(t))) == traces.dumps(t)
        r = traces.replay(t)
        assert r.divergence is None


@pytest.mark.parametrize(
    "content,needle",
    [
        ("[", "not JSON"),
        ('{"format": "kvmodel-trace/1"}', "not a kvmodel trace"),
        (
            '{"format": "kvmodel-trace/9", "component": "kv_manager", "config": {}, "quirks": [], "steps": []}',
            "not a kvmodel trace",
        ),
    ],
)
def test_bad_trace_files(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, needle: str) -> None:
    f = tmp_path / "t.json"
    f.write_text(content)
    assert cli.main(["replay", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(f) in err and needle in err


def test_trace_with_unknown_component_or_quirk(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = _trace()
    for patch, needle in (
        ({"component": "warp_drive"}, "unknown component"),
        ({"quirks": ["no_such_quirk"]}, "unknown quirk"),
        ({"config": {"max_capacity": -1}}, "max_capacity"),
        # the component is named before its revision is looked up
        ({"component": "warp_drive", "revision": "R01"}, "unknown component"),
        # a step naming no operation of the component is a malformed trace, not a divergence
        (
            {"steps": [*t["steps"], {"op": "warp", "args": {}}]},
            f"step {len(t['steps'])}: 'warp' is not an operation of kv_manager",
        ),
        # a schema message quoting a long value keeps what it says is wrong
        ({"steps": [{"op": "current_capacity"}] * 100_001}, "is too long"),
    ):
        f = tmp_path / "t.json"
        f.write_text(json.dumps({**t, **patch}))
        assert cli.main(["replay", str(f)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and needle in err, err


def test_replay_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ok = tmp_path / "ok.json"
    traces.write(_trace(), ok)
    assert cli.main(["replay", str(ok)]) == 0
    assert "every recorded observation reproduced" in capsys.readouterr().out
    bad = _trace()
    bad["steps"][0]["observe"]["returns"] = False
    p = tmp_path / "bad.json"
    traces.write(bad, p)
    assert cli.main(["replay", str(p), "--json"]) == 1
    res = json.loads(capsys.readouterr().out)
    assert res["divergence_step"] == 0 and "returns" in res["divergence"]
    viol = traces.record(
        "kv_manager", {"max_capacity": 4}, ["deref_ignores_unknown"], [("process", {"Deref": [{"F": 1}]})]
    )
    p2 = tmp_path / "viol.json"
    traces.write(viol, p2)
    assert cli.main(["replay", str(p2), "--json"]) == 1
    res = json.loads(capsys.readouterr().out)
    assert res["reproduces_recorded_violation"] is True
    assert res["violation"]["invariant"] == "kv.deref_never_below_zero"


def test_itf_export_is_read_by_itf_py(tmp_path: Path) -> None:
    """A counterexample exported as ITF (Apalache/Quint) parses with itf-py, state for step,
    with u64 hashes as big integers and nulls as a unit variant."""
    import itf_py

    big = 2**64 - 5
    ops = [("process", {"Use": [{"F": big}, {"F": 7}]}), ("process", {"Destroy": [{"F": big}, {"F": big}]})]
    trace = traces.record("kv_manager", {}, sorted(faithful_quirks("kv_manager")), ops)
    path = tmp_path / "t.json"
    traces.write(trace, path)
    itf = tmp_path / "t.itf.json"
    assert cli.main(["replay", str(path), "--itf", str(itf)]) in (0, 1)
    doc = json.loads(itf.read_text())
    assert doc["#meta"]["format"] == "ITF" and doc["#meta"]["component"] == "kv_manager"
    parsed = itf_py.trace_from_json(doc)
    assert len(parsed.states) == len(trace["steps"])
    first = parsed.states[0].values
    assert first["op"] == "process" and first["args"].Use[0].F == big
    assert first["events"][0].Store.blocks == [big, 7]
    assert type(first["events"][0].Store.parent_hash).__name__ == "Null"
    last = parsed.states[-1].values
    assert last["outcome"].kind == ("error" if "error" in trace["steps"][-1]["observe"] else "returns")


@given(tampered=st.sets(st.integers(0, len(OPS) - 1), min_size=1))
def test_keep_going_reports_every_tampered_step(tampered: set[int]) -> None:
    """Change the recorded result of some steps: the plain replay names the first, and stops
    there; ``keep_going`` runs every step and names each tampered one (and no other)."""
    t = copy.deepcopy(_trace())
    for i in tampered:
        obs = t["steps"][i]["observe"]
        obs["returns"] = ["tampered", obs.get("returns")]
        obs.pop("error", None)
    first = traces.replay(t)
    assert first.divergence_step == min(tampered) and first.steps_run == min(tampered) + 1
    assert [d["step"] for d in first.divergences] == [min(tampered)]
    every = traces.replay(t, keep_going=True)
    assert every.steps_run == len(OPS) and every.divergence == first.divergence
    assert {d["step"] for d in every.divergences} == tampered
    assert every.verdict == "violation"


def test_replay_keep_going_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = copy.deepcopy(_trace())
    for i in (1, 4):
        t["steps"][i]["observe"]["returns"] = "tampered"
        t["steps"][i]["observe"].pop("error", None)
    p = tmp_path / "t.json"
    traces.write(t, p)
    assert cli.main(["replay", "--brief", "--keep-going", str(p)]) == 1
    out = capsys.readouterr().out
    assert "2 divergences in all:" in out and "  step 1 process:" in out and "  step 4 probe_new_blocks:" in out


def test_the_kv_minimizer_merges_two_uses_into_the_one_that_overflows() -> None:
    """``use_non_atomic`` at capacity 4: a Use of two new blocks then one of three overflows at
    the second; no deletion keeps the violation, the merged Use of five does it in one step."""
    ops = [("process", {"Use": [{"F": 0}, {"F": 1}]}), ("process", {"Use": [{"F": 2}, {"F": 3}, {"F": 4}]})]
    cfg = {"max_capacity": 4}
    inv = "kv.router_view_matches_resident"
    t = traces.record("kv_manager", cfg, ["use_non_atomic"], ops, target=[inv])
    assert t["violation"] is not None and t["violation"]["step"] == 1
    got = traces.minimize("kv_manager", cfg, ["use_non_atomic"], ops, inv)
    assert got == [("process", {"Use": [{"F": 0}, {"F": 1}, {"F": 2}, {"F": 3}, {"F": 4}]})]
    assert traces.record("kv_manager", cfg, ["use_non_atomic"], got, target=[inv])["violation"]["step"] == 0
