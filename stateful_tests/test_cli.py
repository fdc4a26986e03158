"""The command line: exit codes, outputs, generated docs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kvmodel import cli, invariants, traces
from kvmodel.docs import invariants_markdown

ROOT = Path(__file__).resolve().parents[1]


def test_check_ideal_exits_0(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc = cli.main(
        [
            "check",
            "--component",
            "kv_manager",
            "--engine",
            "hypothesis",
            "--ideal",
            "--max-examples",
            "60",
            "--json",
            "--out",
            str(tmp_path),
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["ok"] is True
    (row,) = out["results"]
    assert row["verdict"] == "pass" and row["steps"] > 0 and row["steps_per_second"] > 0
    assert list(tmp_path.iterdir()) == []


def test_check_faithful_exits_1_with_a_replayable_trace(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc = cli.main(
        ["check", "--component", "kv_manager", "--engine", "hypothesis", "--faithful", "--out", str(tmp_path)]
    )
    assert rc == 1
    assert "VIOLATION" in capsys.readouterr().out
    (path,) = list(tmp_path.iterdir())
    t = traces.load(path)
    assert t["violation"] is not None
    assert cli.main(["replay", str(path), "--json"]) == 1
    res = json.loads(capsys.readouterr().out)
    assert res["divergence"] is None and res["reproduces_recorded_violation"] is True


def test_check_lru_default_mode_reproduces_the_quirk(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc = cli.main(["check", "--component", "lru_evictor_wallclock", "--json", "--out", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    verdicts = {(r["engine"], r["check"]): r["verdict"] for r in out["results"]}
    assert verdicts == {
        ("hypothesis", "ideal"): "pass",
        ("hypothesis", "quirk equal_timestamp_stale_entry"): "reproduced",
        ("explore", "ideal (exhaustive)"): "pass",
        ("explore", "quirk equal_timestamp_stale_entry (BFS, stops at the shallowest)"): "reproduced",
        ("z3", "ideal (k-induction)"): "pass",
        ("z3", "quirk equal_timestamp_stale_entry (BMC)"): "reproduced",
    }


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", "--component", "nonesuch"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nonesuch" in err
    assert cli.main(["invariants", "--component", "nonesuch"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert cli.main(["check", "--ideal", "--faithful"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert cli.main([]) == 2


def test_invariants_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["invariants", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["count"] == len(invariants.ALL) >= 15
    names = {i["name"] for i in out["invariants"]}
    for must in (
        "kv.refcount_positive",
        "kv.active_inactive_disjoint",
        "kv.all_blocks_union",
        "kv.capacity_bound",
        "kv.store_parent_stored",
        "kv.remove_only_stored",
        "kv.router_view_matches_resident",
    ):
        assert must in names
    assert cli.main(["invariants", "--component", "kv_manager"]) == 0
    assert f"{len(invariants.for_component('kv_manager'))} invariants" in capsys.readouterr().out


def test_docs_invariants_md_is_generated_from_the_registry() -> None:
    assert (ROOT / "docs" / "invariants.md").read_text() == invariants_markdown()


def test_quirks_listing(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["quirks", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["count"] >= 12 and all(q["breaks"] for q in out["quirks"])


def test_console_script_runs() -> None:
    r = subprocess.run([sys.executable, "-m", "kvmodel.cli", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("kvmodel ")


def test_python_dash_m_kvmodel_is_the_command_with_its_exit_codes() -> None:
    r = subprocess.run([sys.executable, "-m", "kvmodel", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("kvmodel ")
    bad = subprocess.run([sys.executable, "-m", "kvmodel", "explore", "--workers", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--workers" in bad.stderr


def test_check_junit_is_accepted_by_a_junit_parser(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from junitparser import Failure, JUnitXml

    ok = tmp_path / "ok.xml"
    assert cli.main(["check", "--component", "lru_evictor_wallclock", "--junit", str(ok), "--out", str(tmp_path)]) == 0
    xml = JUnitXml.fromfile(str(ok))
    suites = {s.name: s for s in xml}
    assert set(suites) == {f"lru_evictor_wallclock.{e}" for e in ("hypothesis", "explore", "z3")}
    cases = [c for s in xml for c in s]
    # one case per invariant of the ideal check, plus one per quirk check, per engine
    assert len(cases) == 3 * (7 + 1) and xml.failures == 0
    assert any(c.name == "ideal (k-induction): lru.queue_covers_table" for c in cases)

    bad = tmp_path / "bad.xml"
    args = ["check", "--component", "kv_manager", "--engine", "hypothesis", "--faithful", "--junit", str(bad)]
    assert cli.main([*args, "--out", str(tmp_path)]) == 1
    capsys.readouterr()
    xml = JUnitXml.fromfile(str(bad))
    failed = [c for s in xml for c in s if any(isinstance(r, Failure) for r in c.result)]
    assert len(failed) == 1 and xml.failures == 1
    assert failed[0].name.startswith("faithful: kv.")
