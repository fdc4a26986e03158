"""``kvmodel swarm``: the task list is a function of the campaign seed, a task's result a function
of its description; a campaign on 1 and on 2 workers, on a cluster started with Dask's own
command-line tools, and one that loses a worker mid-run all give the same report (apart from the
``run`` section); a crash is an error row with its description; every output format gives one
verdict (issue 26)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvmodel import components
from kvmodel.swarm import campaign, merge, tasks

pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parent.parent
KVMODEL = [sys.executable, "-m", "kvmodel.cli"]
# a quick campaign: the two LRU evictors on the explorer and Hypothesis (about 3 s of work)
QUICK = ["--components", "lru_evictor_wallclock,lru_evictor_counter", "--max-examples", "30", "--tasks", "16"]


def _matrix() -> list[tasks.Cell]:
    return tasks.cells([c.name for c in components.registered()], tasks.DEFAULT_ENGINES)


def _comparable(summary: dict[str, Any], out: Path) -> dict[str, Any]:
    """The report without what depends on the run (timings, workers, reruns) and the folder."""
    s = dict(summary)
    s.pop("run")
    return json.loads(json.dumps(s).replace(str(out), "OUT"))


def _swarm(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KVMODEL, "swarm", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32), count=st.integers(1, 250))
def test_the_task_list_is_a_function_of_the_seed(seed: int, count: int) -> None:
    matrix = _matrix()
    a = tasks.plan(matrix, seed, count)
    assert a == tasks.plan(matrix, seed, count)
    assert [t.id for t in a] == list(range(len(a)))
    assert len(a) == count  # Hypothesis and conformance cells never run out
    # the anchors: every cell once (in a seeded order), at kvmodel check's configuration
    anchors = [t for t in a if t.anchor]
    assert len(anchors) == min(count, len(matrix))
    assert len({t.cell for t in anchors}) == len(anchors)
    # a deterministic engine never runs the same configuration twice in a cell
    seen = [(t.cell, json.dumps(t.config, sort_keys=True)) for t in a if t.engine in ("explore", "z3")]
    assert len(seen) == len(set(seen))
    for t in a:
        assert tasks.Task.from_json(json.loads(json.dumps(t.to_json()))) == t
        if t.engine == "hypothesis":
            assert t.config["max_examples"] >= 1 and t.config["steps"] in (30, *tasks.Distribution().steps)
    if count > len(matrix):
        assert tasks.plan(matrix, seed + 1, count) != a


def test_every_cell_of_the_matrix_is_covered_by_a_full_pass() -> None:
    matrix = _matrix()
    plan = tasks.plan(matrix, 3, len(matrix))
    assert {t.cell for t in plan} == {c.name for c in matrix}
    quirks = {(c.component, c.case.quirk) for c in matrix if c.case.kind == "quirk"}
    assert quirks and quirks == {(c.name, q.name) for c in components.registered() for q in _quirks(c.name)}


def _quirks(name: str) -> list[Any]:
    from kvmodel.model.quirks import quirks_of

    return list(quirks_of(name))


def test_explore_worlds_respect_the_cost_bound_and_the_case() -> None:
    dist = tasks.Distribution(explore_max_seconds=1.0)
    cost = tasks.manifest_seconds()
    for cell in _matrix():
        if cell.engine != "explore":
            continue
        worlds = tasks.explore_worlds(cell.component, cell.case, dist)
        assert worlds[0]["world"] == "check"
        for w in worlds[1:]:
            assert cost[w["world"]] <= 1.0


def test_run_task_is_pure_and_a_crash_is_an_error_row() -> None:
    plan = tasks.plan(tasks.cells(["lru_evictor_wallclock"], ["explore", "hypothesis"]), 5, 6)
    for t in plan:
        a, b = tasks.run_task(t.to_json()), tasks.run_task(t.to_json())
        a.pop("timing"), b.pop("timing")
        assert a == b
    bad = {**plan[0].to_json(), "engine": "no-such-engine"}
    r = tasks.run_task(bad)
    assert r["outcome"] == "error" and "no-such-engine" in r["error"]
    bad = {**plan[0].to_json(), "component": "no-such-component"}
    assert tasks.run_task(bad)["outcome"] == "error"


def _in_process(plan: list[tasks.Task]) -> campaign.RunLog:
    log = campaign.RunLog(workers=0, scheduler="in-process")
    for t in plan:
        log.tasks[t.id] = t
        log.results[t.id] = tasks.run_task(t.to_json())
    return log


def test_a_crashed_task_is_reported_and_decides_the_verdict(tmp_path: Path) -> None:
    matrix = tasks.cells(["lru_evictor_counter"], ["explore"])
    plan = tasks.plan(matrix, 0, 1)
    crashed = tasks.Task(1, "explore", "lru_evictor_counter", plan[0].cell, plan[0].case, {"space": {}}, 0)
    log = _in_process([*plan, crashed])
    s = merge.merge(log, matrix, seed=0, requested={}, dist=tasks.Distribution(), out_dir=tmp_path)
    assert s["verdict"] == "error" and s["counts"]["errors"] == 1
    assert s["errors"][0]["id"] == 1 and "task 1: explore lru_evictor_counter" in s["errors"][0]["task"]


def test_every_output_format_gives_the_same_verdict(tmp_path: Path) -> None:
    """A quirk no task can reproduce (one example of one step) is a violation in JSON, JUnit
    and HTML alike; a reproduced one passes in all three."""
    from kvmodel import report

    # two quirks whose shortest counterexample has two steps
    wanted = ("use_non_atomic", "destroy_mutates_before_panic")
    matrix = [c for c in tasks.cells(["kv_manager"], ["hypothesis"]) if c.case.quirk in wanted]
    dist = tasks.Distribution(max_examples=1, steps=(1,))
    plan = tasks.plan(matrix, 0, 2, dist)
    log = _in_process(
        [tasks.Task(t.id, t.engine, t.component, t.cell, t.case, {**t.config, "steps": 1}, t.seed, True) for t in plan]
    )
    s = merge.merge(log, matrix, seed=0, requested={"components": ["kv_manager"]}, dist=dist, out_dir=tmp_path)
    report.write_outputs(s, html=str(tmp_path / "r.html"), junit=str(tmp_path / "r.xml"), itf=False)
    root = ET.parse(tmp_path / "r.xml").getroot()
    failures = int(root.get("failures") or 0) + int(root.get("errors") or 0)
    page = (tmp_path / "r.html").read_text()
    bad = [c for c in s["results"] if c["outcome"] != "pass"]
    assert (s["verdict"] == "pass") == (not bad) == (failures == 0)
    assert f"verdict <b>{s['verdict']}</b>" in page and "<h1>kvmodel swarm</h1>" in page
    assert len(bad) == 2, "one example of one step reproduces neither quirk"


def test_one_and_two_workers_give_the_same_report(tmp_path: Path) -> None:
    outs = []
    for n in (1, 2):
        out = tmp_path / f"w{n}"
        p = _swarm(*QUICK, "--workers", str(n), "--seed", "11", "--out", str(out), "--json", cwd=tmp_path)
        assert p.returncode == 0, p.stderr[-2000:]
        s = json.loads(p.stdout)
        assert s["run"]["workers"] == n and sum(s["run"]["per_worker"].values()) == 16
        assert s["counts"]["tasks"] == 16 and s["counts"]["quirks_reproduced"] == s["counts"]["quirks_covered"] >= 1
        outs.append((s, out))
    assert _comparable(*outs[0]) == _comparable(*outs[1])
    names = sorted(p.name for p in outs[0][1].iterdir())
    assert names == sorted(p.name for p in outs[1][1].iterdir()) and names
    for n in names:
        assert (outs[0][1] / n).read_bytes() == (outs[1][1] / n).read_bytes()
    # each saved counterexample replays on the model: same observations, same violation
    from kvmodel import traces

    for n in names:
        r = traces.replay(traces.load(outs[0][1] / n))
        assert r.divergence is None and r.reproduces_recorded, n


def test_a_killed_worker_loses_nothing() -> None:
    """SIGKILL a worker process while it runs a task: its tasks are rerun elsewhere (the report
    says which), and the report equals the undisturbed one (every task run in this process)."""
    matrix = tasks.cells(["lru_evictor_wallclock", "kv_manager"], ["explore"])
    dist = tasks.Distribution()
    plan = tasks.plan(matrix, 7, 24, dist)
    ref = merge.merge(_in_process(plan), matrix, seed=7, requested={}, dist=dist, out_dir=None)
    cluster, client = campaign.local_cluster(2)
    try:
        pids = client.run(os.getpid)
        killed: list[str] = []

        def kill_one(task: tasks.Task, res: dict[str, Any], log: campaign.RunLog) -> None:
            if killed or len(log.results) < 2:
                return
            for addr, keys in sorted(client.processing().items()):
                if keys and addr in pids:
                    os.kill(pids[addr], signal.SIGKILL)
                    killed.append(addr)
                    return

        log = campaign.run(iter(plan), client, on_result=kill_one)
    finally:
        client.close()
        cluster.close()
    assert killed, "no task was running when the campaign was half done"
    assert log.workers_lost == 1 and log.reruns, log
    got = merge.merge(log, matrix, seed=7, requested={}, dist=dist, out_dir=None)
    assert got["run"]["reruns"] == log.reruns
    got.pop("run")
    ref.pop("run")
    assert got == ref


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_cluster_started_with_dasks_own_tools(tmp_path: Path) -> None:
    """A scheduler and two workers as separate processes (``dask scheduler``, ``dask worker``),
    and ``kvmodel swarm --scheduler`` against them: the same report as a local cluster."""
    dask = Path(sys.executable).parent / "dask"
    if not dask.exists():
        pytest.skip("the dask command is not installed beside this Python")
    port = _free_port()
    addr = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    procs = [
        subprocess.Popen(
            [str(dask), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
    ]
    try:
        for i in range(2):
            procs.append(
                subprocess.Popen(
                    [
                        str(dask),
                        "worker",
                        addr,
                        "--nthreads",
                        "1",
                        "--nworkers",
                        "1",
                        "--no-dashboard",
                        "--name",
                        f"w{i}",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env=env,
                    cwd=tmp_path,
                )
            )
        from distributed import Client

        deadline = time.monotonic() + 60
        while True:
            try:
                with Client(addr, timeout=5) as c:
                    c.wait_for_workers(2, timeout=max(1.0, deadline - time.monotonic()))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        out = tmp_path / "cluster"
        p = _swarm(*QUICK, "--scheduler", addr, "--seed", "11", "--out", str(out), "--json", cwd=tmp_path)
        assert p.returncode == 0, p.stderr[-2000:]
        s = json.loads(p.stdout)
        assert s["run"]["workers"] == 2 and s["run"]["scheduler"] == addr
        local = tmp_path / "local"
        q = _swarm(*QUICK, "--workers", "1", "--seed", "11", "--out", str(local), "--json", cwd=tmp_path)
        assert q.returncode == 0, q.stderr[-2000:]
        assert _comparable(s, out) == _comparable(json.loads(q.stdout), local)
    finally:
        for pr in reversed(procs):
            pr.terminate()
        for pr in procs:
            try:
                pr.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pr.kill()


def test_budget_stops_submitting_and_reports_what_ran(tmp_path: Path) -> None:
    p = _swarm(
        "--components",
        "lru_evictor_counter",
        "--engines",
        "hypothesis",
        "--max-examples",
        "20",
        "--budget",
        "3s",
        "--workers",
        "1",
        "--out",
        str(tmp_path / "o"),
        "--json",
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    s = json.loads(p.stdout)
    assert s["run"]["stopped_by_budget"] and s["counts"]["tasks"] >= 1
    assert [t["id"] for t in s["tasks"]] == list(range(s["counts"]["tasks"]))  # a prefix of the stream


class _FakeClient:
    """Only ``run``: what every worker's probe answered."""

    def __init__(self, answers: dict[str, dict[str, str | None]]) -> None:
        self.answers = answers

    def run(self, fn: Any, *args: Any) -> dict[str, dict[str, str | None]]:
        return self.answers


def test_a_missing_real_part_on_any_worker_fails_clearly() -> None:
    comp, target = next(components.targets())
    plan = [
        tasks.Task(0, "conform", comp.name, "c", {"kind": "conform", "quirk": target.name}, {"target": target.name}, 0)
    ]
    answers = {"tcp://a:1": {target.name: None}, "tcp://b:2": {target.name: "the wheel is not installed"}}
    with pytest.raises(campaign.SwarmError, match=r"worker tcp://b:2: target .*: the wheel is not installed"):
        campaign.check_real_parts(_FakeClient(answers), plan)
    campaign.check_real_parts(_FakeClient({"tcp://a:1": {target.name: None}}), plan)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--components", "nope"], "--components: unknown component 'nope'"),
        (["--engines", "hypothesis,spin"], "--engines: unknown engine 'spin'"),
        (["--targets", "nope"], "--targets: unknown target 'nope'"),
        (["--budget", "soon"], "not a duration"),
        (["--tasks", "0"], "--tasks"),
        (["--revision", "x"], "--revision needs exactly one --components"),
        (["--scheduler", "tcp://127.0.0.1:9", "--tasks", "1"], "--scheduler tcp://127.0.0.1:9: cannot connect"),
    ],
)
def test_bad_arguments_get_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"}
    p = subprocess.run([*KVMODEL, "swarm", *args], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 2
    assert message in p.stderr and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
