"""Issue 57: honest when the implementation, the network or the user misbehaves. One regression
test (or more) per point of the issue: exact comparison, BaseException from an adapter, a garbage
or silent scheduler, harness deadlocks, a scheduler that dies, step timeouts that keep the process
alive, orphans, atomic output, bounded resources, interrupts, printed names and encodings."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from kvmodel import api, exact, jsonio, traces
from kvmodel.api import ModelAdapter, check_implementation
from kvmodel.harness import ExecAdapter, HarnessError, HarnessFailure

ROOT = Path(__file__).resolve().parents[1]
CHILDREN = ROOT / "tools" / "harness_children.py"
LRU = "lru_evictor_counter"
KVMODEL = [sys.executable, "-m", "kvmodel"]


def conform_exec(mode: str, *extra: str, timeout: float = 120) -> tuple[int, dict[str, Any], str, float]:
    t0 = time.monotonic()
    p = subprocess.run(
        [*KVMODEL, "conform", "--target", "exec", "--component", LRU, "--workloads", "10", "--json",
         "--step-timeout", "2", *extra, "--", sys.executable, str(CHILDREN), mode, LRU],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    out = json.loads(p.stdout) if p.stdout.strip() else {}
    return p.returncode, out, p.stderr, time.monotonic() - t0


def group_alive(pgid: int) -> list[str]:
    return subprocess.run(["pgrep", "-g", str(pgid)], capture_output=True, text=True).stdout.split()


# -- 1. exact comparison


@pytest.mark.parametrize("mode", ["bool-for-int", "float-for-int"])
def test_a_child_answering_another_json_type_diverges(mode: str) -> None:
    rc, out, _, _ = conform_exec(mode)
    assert rc == 1 and out["verdict"] == "violation"
    assert out["first_divergence"]["what"] == "returns"


def test_the_honest_child_passes() -> None:
    rc, out, err, _ = conform_exec("honest")
    assert rc == 0 and out["verdict"] == "pass", err


def test_exact_same_is_typed() -> None:
    assert not exact.same(True, 1) and not exact.same(2.0, 2) and not exact.same("1", 1)
    assert exact.same({"a": [1, {"b": None}], "c": 2.5}, {"c": 2.5, "a": [1, {"b": None}]})
    assert not exact.same([1, 2], [2, 1])
    with pytest.raises(exact.NotJSON):
        exact.as_json(mock.MagicMock())
    with pytest.raises(exact.NotJSON):
        exact.as_json(float("nan"))


class Answering(ModelAdapter):
    """The model, with one field of every answer replaced."""

    def __init__(self, value: Any) -> None:
        super().__init__(LRU)
        self.value = value

    def step(self, op: str, args: Any) -> dict[str, Any]:
        obs = super().step(op, args)
        obs["returns"] = self.value
        return obs


@pytest.mark.parametrize("value", [mock.ANY, mock.MagicMock(), {1, 2}, float("nan")])
def test_an_adapter_answering_non_json_is_malformed(value: Any) -> None:
    rep = check_implementation(Answering(value), LRU, workloads=5)
    assert not rep.ok and rep.divergence is not None and rep.divergence.what == "malformed"


def test_renamed_ids_are_typed() -> None:
    r = api.Renaming(("handle",))
    assert r.same_events([{"handle": 1, "x": 0}], [{"handle": 7, "x": 0}])
    assert not r.same_events([{"handle": 1, "x": 0}], [{"handle": 7, "x": False}])
    r2 = api.Renaming(("handle",))
    assert r2.same_events([{"handle": 1}], [{"handle": 5}])
    assert not r2.same_events([{"handle": True}], [{"handle": 5}])  # true is another id than 1


# -- 2. BaseException from an adapter; a name that raises


class Raising(ModelAdapter):
    def __init__(self, exc: BaseException, at: int = 3) -> None:
        super().__init__(LRU)
        self.exc, self.at, self.n = exc, at, 0

    def step(self, op: str, args: Any) -> dict[str, Any]:
        self.n += 1
        if self.n == self.at:
            raise self.exc
        return super().step(op, args)


@pytest.mark.parametrize("exc", [SystemExit(0), KeyboardInterrupt(), GeneratorExit()])
@pytest.mark.parametrize("timeout", [1.0, None])
def test_base_exceptions_from_an_adapter_are_divergences(exc: BaseException, timeout: float | None) -> None:
    rep = check_implementation(Raising(exc), LRU, workloads=5, step_timeout=timeout)
    assert rep.divergence is not None and rep.divergence.what == "abort"
    assert rep.verdict == "violation"


class BadName:
    def __init__(self) -> None:
        self.inner = ModelAdapter(LRU)

    @property
    def name(self) -> str:
        raise SystemExit(3)

    def reset(self, config: dict[str, Any]) -> None:
        self.inner.reset(config)

    def step(self, op: str, args: Any) -> dict[str, Any]:
        return self.inner.step(op, args)


def test_a_name_that_raises_is_the_type_name() -> None:
    rep = check_implementation(BadName(), LRU, workloads=3)
    assert rep.implementation == "BadName" and rep.verdict == "pass"


# -- 3 and 5. the swarm's network side


def _fake_scheduler(mode: str) -> tuple[socket.socket, threading.Thread]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    held: list[socket.socket] = []

    def serve() -> None:
        srv.settimeout(30)
        try:
            while True:
                c, _ = srv.accept()
                if mode == "garbage":
                    c.sendall(b"\xff" * 64 + os.urandom(1024))
                elif mode == "close":
                    c.close()
                else:
                    held.append(c)
        except OSError:
            pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return srv, t


@pytest.mark.parametrize("mode", ["garbage", "silent", "close"])
def test_a_peer_that_is_not_a_scheduler_ends_in_one_line(mode: str) -> None:
    pytest.importorskip("distributed")
    srv, _ = _fake_scheduler(mode)
    port = srv.getsockname()[1]
    t0 = time.monotonic()
    p = subprocess.run(
        [*KVMODEL, "swarm", "--scheduler", f"tcp://127.0.0.1:{port}", "--tasks", "2", "--out", "/tmp/kvm-sw-x"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    srv.close()
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    assert time.monotonic() - t0 < 30


def test_a_scheduler_that_dies_mid_campaign_ends_with_a_partial_report(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    addr = f"tcp://127.0.0.1:{port.getsockname()[1]}"
    port.close()
    bin_ = Path(sys.executable).parent
    sched = subprocess.Popen([str(bin_ / "dask"), "scheduler", "--host", "127.0.0.1", "--port", addr.rsplit(":", 1)[1],
                              "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)  # fmt: skip
    worker = subprocess.Popen([str(bin_ / "dask"), "worker", addr, "--nthreads", "1", "--no-dashboard"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        host, port_ = "127.0.0.1", int(addr.rsplit(":", 1)[1])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the scheduler listens
            with socket.socket() as probe:
                if probe.connect_ex((host, port_)) == 0:
                    break
            time.sleep(0.2)
        run = subprocess.Popen(
            [*KVMODEL, "swarm", "--scheduler", addr, "--tasks", "400", "--out", str(tmp_path / "t"), "--json",
             "--junit", str(tmp_path / "j.xml")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(15)  # connected, the worker joined, tasks running
        os.killpg(sched.pid, signal.SIGKILL)
        out, err = run.communicate(timeout=90)
    finally:
        for p in (sched, worker):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
    assert run.returncode == 2, err
    assert "went away mid-campaign" in err and len(err.strip().splitlines()) == 1
    doc = json.loads(out)
    assert doc["verdict"] == "error" and doc["incomplete"]
    assert "<error" in (tmp_path / "j.xml").read_text()


# -- 4. harness deadlocks


def test_a_child_that_never_reads_cannot_block_a_write(tmp_path: Path) -> None:
    child = tmp_path / "c.py"
    child.write_text(
        textwrap.dedent("""
        import sys, json, time
        sys.stdin.buffer.readline()
        print(json.dumps({"type": "hello", "protocol": "kvmodel-harness/1"}), flush=True)
        time.sleep(120)
    """)
    )
    a = ExecAdapter([sys.executable, str(child)], step_timeout=1.0)
    a.start()
    t0 = time.monotonic()
    with pytest.raises(HarnessFailure) as e:
        a.reset({"pad": "x" * (4 << 20)})  # far more than a pipe holds
    assert e.value.divergence_kind == "timeout" and time.monotonic() - t0 < 5
    a.close()


def test_a_child_that_closes_its_output_and_runs_on_is_a_crash() -> None:
    rc, out, _, _took = conform_exec("close-stdout", timeout=120)
    assert rc == 1 and out["first_divergence"]["what"] == "crash"
    assert "closed its output" in out["first_divergence"]["implementation"]


# -- 6. a hung step never keeps the process alive


def test_the_api_exits_after_a_step_timeout(tmp_path: Path) -> None:
    script = tmp_path / "hang.py"
    script.write_text(
        textwrap.dedent(f"""
        import time
        from kvmodel.api import ModelAdapter, check_implementation
        class Hang(ModelAdapter):
            def __init__(self):
                super().__init__({LRU!r}); self.n = 0
            def step(self, op, args):
                self.n += 1
                if self.n == 5:
                    time.sleep(3600)
                return super().step(op, args)
        r = check_implementation(Hang(), {LRU!r}, workloads=10, step_timeout=0.5)
        print(r.divergence.what)
    """)
    )
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "timeout", p.stderr


# -- 7. orphans


def test_a_child_that_exits_while_a_grandchild_holds_its_pipes_is_a_crash() -> None:
    rc, out, _, took = conform_exec("orphan")
    assert rc == 1 and out["first_divergence"]["what"] == "crash" and took < 60
    time.sleep(0.5)
    assert subprocess.run(["pgrep", "-f", "time.sleep.120"], capture_output=True).returncode == 1


def test_no_grandchild_survives_a_run() -> None:
    rc, _out, err, _ = conform_exec("fork-sleepers")
    assert rc == 0, err
    time.sleep(0.5)
    assert subprocess.run(["pgrep", "-x", "-f", "sleep 60"], capture_output=True).returncode == 1


def _signal_run(cmd: list[str], sig: int, after: float) -> tuple[int, str, float, list[str]]:
    p = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    time.sleep(after)
    p.send_signal(sig)
    t0 = time.monotonic()
    _, err = p.communicate(timeout=60)
    took = time.monotonic() - t0
    left: list[str] = []
    for _ in range(20):  # killed processes may take a moment to be reaped
        left = group_alive(p.pid)
        if not left:
            break
        time.sleep(0.1)
    return p.returncode, err, took, left


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signals_end_explore_with_workers_and_leave_nothing(sig: int, code: int) -> None:
    rc, err, took, left = _signal_run(
        [*KVMODEL, "explore", "--component", "g1", "--owners", "3", "--capacity", "4", "--workers", "2"], sig, 4
    )
    assert rc == code and took < 3 and not left
    assert err.strip().splitlines() == [f"kvmodel: interrupted ({signal.Signals(sig).name}): no verdict"]


def test_sigterm_ends_conform_exec_and_its_child() -> None:
    cmd = [*KVMODEL, "conform", "--target", "exec", "--component", LRU, "--workloads", "50", "--step-timeout", "60",
           "--", sys.executable, str(CHILDREN), "hang", LRU]  # fmt: skip
    rc, err, took, left = _signal_run(cmd, signal.SIGTERM, 4)
    assert rc == 143 and took < 3 and not left
    assert len(err.strip().splitlines()) == 1


def test_sigint_ends_check_with_one_line() -> None:
    rc, err, took, left = _signal_run([*KVMODEL, "check", "--component", "kv_manager"], signal.SIGINT, 4)
    assert rc == 130 and took < 3 and not left and len(err.strip().splitlines()) == 1


# -- 8. atomic output


def test_a_failed_write_leaves_no_stale_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    junit = tmp_path / "j.xml"
    junit.write_text("<testsuites failures='0' errors='0'/>")  # an earlier run's pass
    real = os.write

    def full(fd: int, data: Any) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError, match="No space left"):
        jsonio.write_text(junit, "<testsuites/>")
    monkeypatch.setattr(os, "write", real)
    assert not junit.exists()
    assert list(tmp_path.iterdir()) == []  # no temporary file either


def test_report_outputs_are_removed_together_on_failure(tmp_path: Path) -> None:
    from kvmodel import report

    junit, html = tmp_path / "j.xml", tmp_path / "r.html"
    junit.write_text("stale pass")
    html.mkdir()  # the HTML report cannot be written: a directory in the way
    summary = {"results": [], "components": [], "engines": [], "mode": "ideal", "ok": True}
    with pytest.raises(OSError):
        report.write_outputs(summary, html=str(html), junit=str(junit), itf=False)
    assert not junit.exists()


def test_a_full_disk_leaves_no_partial_html(tmp_path: Path) -> None:
    if os.geteuid() != 0 or (not Path("/usr/bin/mount").exists() and not Path("/bin/mount").exists()):
        pytest.skip("mounting a small tmpfs needs root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (mnt / "junit.xml").write_text("<testsuites failures='0'/>")
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
        with pytest.raises(OSError):  # the disk, full
            while True:
                os.write(fd, b"x" * 4096)
        os.close(fd)
        p = subprocess.run(
            [*KVMODEL, "check", "--component", "lru_evictor_counter", "--ideal", "--html", str(mnt / "r.html"),
             "--junit", str(mnt / "junit.xml"), "--out", str(tmp_path / "t")],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert p.returncode == 2 and "cannot write" in p.stderr
        assert not (mnt / "junit.xml").exists() and not (mnt / "r.html").exists()
        assert [f for f in mnt.iterdir() if f.name.endswith(".tmp")] == []
    finally:
        subprocess.run(["umount", str(mnt)])


def test_concurrent_writers_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    texts = [json.dumps({"writer": i, "pad": str(i) * 200_000}) for i in range(4)]
    stop = time.monotonic() + 2
    seen: set[str] = set()

    def write(t: str) -> None:
        while time.monotonic() < stop:
            jsonio.write_text(path, t)

    ts = [threading.Thread(target=write, args=(t,)) for t in texts]
    for t in ts:
        t.start()
    while time.monotonic() < stop:
        if path.exists():
            seen.add(path.read_text())
    for t in ts:
        t.join()
    assert seen and seen <= set(texts)


# -- 9. bounded resources


def test_only_a_tail_of_stderr_is_kept() -> None:
    rc, _out, err, _ = conform_exec("stderr-flood")
    assert rc == 0, err


def test_the_stderr_tail_is_bounded(tmp_path: Path) -> None:
    child = tmp_path / "c.py"
    child.write_text(
        textwrap.dedent("""
        import sys, os
        for _ in range(32):
            sys.stderr.buffer.write(b"y" * (1 << 20))
        sys.stderr.buffer.write(b"the end")
        sys.stderr.buffer.flush()
    """)
    )
    a = ExecAdapter([sys.executable, str(child)], step_timeout=5.0)
    with pytest.raises(HarnessError):
        a.start()
    assert a.err is not None and len(a.err.data) <= 2 * 2000 + (1 << 16)
    assert a.stderr_tail(wait=2).endswith("the end")


def test_a_response_of_many_containers_is_malformed() -> None:
    rc, out, _, _ = conform_exec("many-empties")
    assert rc == 1 and out["first_divergence"]["what"] == "malformed"


def test_a_hung_child_is_not_asked_again_while_shrinking() -> None:
    rc, out, _, took = conform_exec("hang")
    assert rc == 1 and out["first_divergence"]["what"] == "timeout"
    assert took < 15 and out["shrink_runs"] == 0


def test_heavy_traces_are_refused_in_one_line(tmp_path: Path) -> None:
    steps = [{"op": "process", "args": {"Use": [{"F": i} for i in range(4096)]}} for _ in range(300)]
    doc = {"format": "kvmodel-trace/1", "component": "kv_manager", "config": {"max_capacity": 4, "block_size": 16},
           "quirks": [], "steps": steps}  # fmt: skip
    big = tmp_path / "big.json"
    big.write_text(json.dumps(doc))
    with pytest.raises(traces.TraceError, match="work bound"):
        traces.load(big)
    doc["steps"] = steps[:1]
    doc["config"]["max_capacity"] = 10**9
    big.write_text(json.dumps(doc))
    p = subprocess.run([*KVMODEL, "replay", str(big)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "work bound" in p.stderr and len(p.stderr.strip().splitlines()) == 1


# -- 11. what the child controls, and odd encodings


def test_a_hello_name_cannot_forge_report_lines() -> None:
    p = subprocess.run(
        [*KVMODEL, "conform", "--target", "exec", "--component", LRU, "--workloads", "3", "--", sys.executable,
         str(CHILDREN), "evil-name", LRU],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert p.returncode == 0
    assert len(p.stdout.strip().splitlines()) == 1 and "\x1b" not in p.stdout


def test_an_ascii_terminal_gets_escapes_not_an_error() -> None:
    env = dict(os.environ, PYTHONIOENCODING="ascii")
    p = subprocess.run([*KVMODEL, "quirks"], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0 and p.stdout


def test_an_interrupt_swallowed_by_a_gc_callback_is_delivered_again() -> None:
    """Hypothesis registers a garbage-collector callback; Ctrl-C landing in it was printed as
    "Exception ignored" and lost (the command ran on). It is now raised again in the command's
    own flow."""
    script = textwrap.dedent("""
        import gc, os, signal, time
        from kvmodel import signals
        fired = []
        def cb(phase, info):
            if phase == "start" and not fired:
                fired.append(1)
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(10000):
                    pass
        gc.callbacks.append(cb)
        with signals.handled():
            try:
                t0 = time.monotonic()
                while time.monotonic() - t0 < 10:
                    gc.collect()
                    time.sleep(0.01)
                print("not interrupted")
            except KeyboardInterrupt:
                print("interrupted")
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert p.stdout.strip() == "interrupted" and "Exception ignored" not in p.stderr, p.stderr


def test_a_conformance_trace_marks_its_divergence_before_a_known_violation() -> None:
    """Issue 58 (tooling): a faithful quirk that breaks an invariant before the divergent step
    no longer hides the divergence in ``show`` and ``replay``."""
    from kvmodel import show

    ops = [
        ("process", {"Use": [{"F": 0}, {"P": "p1"}]}),
        ("process", {"Deref": [{"F": 0}]}),
        ("process", {"Promote": {"uuid": "p1", "hash": 0, "parent_hash": None}}),
        ("num_active_blocks", {}),
    ]
    trace = traces.record("kv_manager", {"max_capacity": 4}, ["promote_leaves_inactive_copy"], ops,
                          stop_at_violation=False)  # fmt: skip
    assert trace.get("violation") and trace["violation"]["step"] == 2
    d = {"step": 3, "op": "num_active_blocks", "args": {}, "what": "returns", "model": 1, "implementation": 2}
    trace["origin"] = {"engine": "differential", "implementation": "port", "divergence": d}
    assert show.marked(trace)["step"] == 3
    res = traces.replay(trace)
    lines = show.replay_lines(trace, res, "t.json")
    assert "diverged from the model at step 3" in lines[1] and "known violation" in lines[2]


def test_a_device_given_as_an_output_is_written_not_replaced() -> None:
    """An atomic write renames a temporary file over its target: never over a device (as root,
    ``--dot /dev/full`` once replaced the device node with a file)."""
    import stat

    with pytest.raises(OSError, match="/dev/full: cannot write"):
        jsonio.write_text("/dev/full", "x")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
