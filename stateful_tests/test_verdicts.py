"""Honest verdicts: exit 0 only for a verdict that was reached, the same in every output format.
One test per verdict that used to lie (issue "Honest verdicts and bad input that never crashes")."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, ClassVar

from kvmodel import cli, traces
from kvmodel.api import check_implementation
from kvmodel.junit import junit_xml
from kvmodel.verdicts import EXIT, exit_code, worst

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import my_kv_manager as example


def _run(argv: list[str], capsys: Any) -> tuple[int, str, str]:
    rc = cli.main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_the_exit_code_table() -> None:
    assert EXIT == {"pass": 0, "violation": 1, "error": 2, "inconclusive": 3}
    assert worst(["pass", "inconclusive", "error"]) == "error"
    assert worst(["inconclusive", "violation"]) == "violation"
    assert worst([]) == "inconclusive"  # nothing decided
    assert exit_code(["pass", "pass"]) == 0


def test_a_bmc_that_times_out_is_inconclusive_in_text_and_json(capsys: Any) -> None:
    argv = ["bmc", "--component", "kv_manager", "--faithful", "--depth", "4", "--timeout", "0.001", "--no-induction"]
    rc, out, _ = _run(argv, capsys)
    assert rc == 3 and "verdict: inconclusive" in out
    rc, out, _ = _run([*argv, "--json"], capsys)
    rep = json.loads(out)
    assert rc == 3 and rep["verdict"] == "inconclusive"
    assert {r["status"] for r in rep["invariants"]} <= {"inconclusive", "violated"}


def test_a_bounded_bmc_pass_is_a_reached_verdict(capsys: Any) -> None:
    rc, out, _ = _run(
        ["bmc", "--component", "lru_evictor_counter", "--ideal", "--depth", "3", "--no-induction", "--json"], capsys
    )
    rep = json.loads(out)
    assert rc == 0 and rep["verdict"] == "pass" and {r["status"] for r in rep["invariants"]} == {"holds"}


def test_an_incomplete_exploration_is_inconclusive(capsys: Any) -> None:
    rc, out, _ = _run(["explore", "--component", "kv_manager", "--max-states", "5", "--json"], capsys)
    assert rc == 3 and json.loads(out)["verdict"] == "inconclusive"


def test_junit_reports_inconclusive_and_error_rows_as_errors() -> None:
    rows = [
        {"engine": "z3", "component": "kv_manager", "check": "ideal (k-induction)", "verdict": "FAIL",
         "outcome": "inconclusive", "seconds": 1.0,
         "invariants": [{"invariant": "kv.capacity", "status": "inconclusive"}]},
        {"engine": "conform", "component": "g1_native", "check": "vs real mocker", "verdict": "FAIL",
         "outcome": "error", "error": "the wheel is missing", "seconds": 0.0},
        {"engine": "conform", "component": "kv_router_radix_tree", "check": "vs real", "verdict": "DIVERGENCE",
         "outcome": "violation", "seconds": 0.0, "violation": {"invariant": "x", "step": 0, "message": "m"}},
    ]  # fmt: skip
    xml = junit_xml(rows)
    assert 'errors="2"' in xml and 'failures="1"' in xml and "<error" in xml and "<failure" in xml


def test_mutants_count_engine_errors_as_errors_not_kills() -> None:
    from kvmodel.mutants import runner

    rep = runner.run(["hypothesis"], only=["kv_store_runs_merged"], max_examples=0)
    row = rep["mutants"][0]
    assert row["killed"] is not True and row["errors"], row
    assert runner.verdict(rep) in ("error", "inconclusive")
    rep = runner.run(["hypothesis"], only=["kv_store_runs_merged"], max_examples=200)
    assert rep["mutants"][0]["killed"] is True and rep["mutants"][0]["engines"]["hypothesis"]["validated"]
    assert runner.verdict(rep) == "pass"


def test_the_cli_refuses_zero_examples_for_mutants(capsys: Any) -> None:
    rc, _, err = _run(["mutants", "--engine", "hypothesis", "--max-examples", "0"], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1


class _WrongOnce(example.MyAdapter):
    """Answers wrong exactly once, ever: a flaky implementation."""

    calls: ClassVar[list[int]] = [0]

    def step(self, op: str, args: Any) -> dict[str, Any]:
        out = super().step(op, args)
        self.calls[0] += 1
        return dict(out, returns="wrong") if self.calls[0] == 40 else out


def test_a_divergence_seen_once_is_flaky_and_not_ok() -> None:
    _WrongOnce.calls[0] = 0
    rep = check_implementation(_WrongOnce(), "kv_manager", workloads=50)
    assert not rep.ok and rep.flaky and rep.divergence is not None and rep.ops
    assert rep.to_json()["verdict"] == "violation" and rep.trace is not None and rep.trace["origin"]["flaky"]
    assert "FLAKY" in rep.explain()


def test_replay_gives_the_same_verdict_in_text_and_json(tmp_path: Path, capsys: Any) -> None:
    ops = [("process", {"Use": [{"F": 0}]})]
    t = traces.record("kv_manager", {"max_capacity": 2}, [], ops)
    t["violation"] = {"invariant": "kv.capacity", "step": 0, "message": "recorded, but it does not reproduce"}
    p = traces.write(t, tmp_path / "t.json")
    rc_text, out, _ = _run(["replay", str(p)], capsys)
    rc_json, js, _ = _run(["replay", str(p), "--json"], capsys)
    assert rc_text == rc_json == 1
    assert json.loads(js)["verdict"] == "violation" and "verdict: violation" in out


def test_vectors_that_run_nothing_are_inconclusive(tmp_path: Path, capsys: Any) -> None:
    f = tmp_path / "v.json"
    f.write_text(json.dumps({"vectors": [{"component": "martian_pool", "name": "a", "steps": []}]}))
    rc, _, _ = _run(["vectors", str(f)], capsys)
    assert rc == 3
