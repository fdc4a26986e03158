"""A bad-input campaign of the size and kinds that found the crashes of issue 20, re-run.

Usage: python tools/fuzz_campaign.py [--seed S] [--scale F] [--json OUT]
       python tools/fuzz_campaign.py --supervision [--json OUT]

``--supervision`` runs the other campaign (issue 57): what the implementation, the network or the
user does wrong — misbehaving harness children (``tools/harness_children.py``), adapters raising
``BaseException``, answering non-JSON or hanging, signals to long commands, fake schedulers
(garbage, silent, closing, dying mid-campaign), a full disk (a small tmpfs when root, else
``/dev/full``), heavy schema-valid traces. Each case runs as its own ``kvmodel`` process with a
time bound; it counts as *dishonest* if its exit code is not the expected verdict's, a *hang* if it
outlives its bound, *left behind* if a process of its group survives it, a *traceback* if one
reaches stderr (or stderr has more than one line on an error or an interrupt), and *stale* if an
output file of an earlier run survives an error exit or a temporary file is left.

Kinds (default counts): 2,253 malformed trace files (through ``show``, ``show --html``,
``replay`` and ``replay --json``; half of them of the KV manager, half of another component with an
explorer world: G1 native and KVBM, the registry, the LRUs), 914 malformed vector files (``vectors``;
half of them three of kvmodel's own Rust-test vectors, half one of Dynamo's), 805 bad argument
lists, 9,115 model operations with arbitrary JSON arguments on every component, ideal and
faithful. Each CLI run is in-process; a run counts as a *traceback* if one reaches stderr or an
exception escapes ``main``, *bad exit* if its code is not 0–3, *multi-line* if it exits 2 with
more than one stderr line; an operation counts as *untyped* if it raises anything but a
``ModelError``, *changed* if the ideal model's state moved on a rejection. Peak RSS is
reported (an OOM kill would end the campaign). Seeded: the same seed, the same inputs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kvmodel import cli, components, jsonio, traces
from kvmodel.model.errors import ModelError
from kvmodel.systems import make_system, system_components

# The campaign's traces, flaky adapter and pinned commands use the default component (the
# mocker's KV manager); the solver-timeout runs take the first three components with a spec
# (a 1 ms solver limit on the G1 specs still pays for building them at every depth).
KV = components.default().name
WITH_SPEC = components.names(lambda c: c.spec is not None)[:3]
EVERY_NAME = [n for c in components.registered() for n in c.names]

ROOT = Path(__file__).resolve().parents[1]


def jvalue(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if depth > 3 or r < 0.45:
        return rng.choice(
            [None, True, False, 0, 1, -1, 2, 2**64, 2**70, 1.5, -0.0, "", "x", KV, "\ud800", "s0", [], {}]
        )
    if r < 0.7:
        return [jvalue(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    keys = [
        "op",
        "args",
        "observe",
        "events",
        "state",
        "error",
        "id",
        "returns",
        "steps",
        "quirks",
        "config",
        "component",
        "format",
        "violation",
        "step",
        "invariant",
        "message",
        "owner",
        "tokens",
        "max_capacity",
    ]
    return {rng.choice(keys): jvalue(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def _paths(x: Any, p: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [p]
    if isinstance(x, dict):
        for k, v in x.items():
            out += _paths(v, (*p, k))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            out += _paths(v, (*p, i))
    return out


def mutate(rng: random.Random, doc: Any) -> Any:
    doc = json.loads(json.dumps(doc))
    for _ in range(rng.randint(1, 4)):
        paths = _paths(doc)
        p = rng.choice([q for q in paths if q] or [()])
        if not p:
            return jvalue(rng)
        parent = doc
        for k in p[:-1]:
            parent = parent[k]
        how = rng.random()
        if how < 0.6:
            parent[p[-1]] = jvalue(rng)
        elif how < 0.8 and isinstance(parent, dict):
            del parent[p[-1]]
        else:
            parent[p[-1]] = [parent[p[-1]], jvalue(rng)]
    return doc


def raw_variants(rng: random.Random, doc: Any) -> bytes:
    text = json.dumps(doc, ensure_ascii=False)
    r = rng.random()
    if r < 0.3:
        return text[: rng.randint(0, len(text))].encode("utf-8", "surrogatepass")
    if r < 0.45:
        return b"\xff" + text.encode("utf-8", "surrogatepass")
    if r < 0.6:
        return b"[" * rng.randint(500, 3000) + b"]" * rng.randint(0, 3000)
    if r < 0.75:
        return text.replace("2", "9" * rng.randint(100, 6000), 1).encode("utf-8", "surrogatepass")
    return text.encode("utf-8", "surrogatepass")


class Tally:
    def __init__(self) -> None:
        self.runs = 0
        self.codes: dict[int, int] = {}
        self.tracebacks: list[str] = []
        self.bad_exit: list[str] = []
        self.multiline: list[str] = []

    def cli(self, argv: list[str]) -> None:
        out, err = io.StringIO(), io.StringIO()
        self.runs += 1
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = cli.main(argv)
            except SystemExit as e:
                rc = int(e.code) if isinstance(e.code, int) else 2
            except BaseException as e:  # an escape is a traceback
                self.tracebacks.append(f"{argv}: {type(e).__name__}: {e}"[:300])
                return
        self.codes[rc] = self.codes.get(rc, 0) + 1
        e = err.getvalue()
        if "Traceback" in e:
            self.tracebacks.append(f"{argv}: {e[-300:]}")
        if rc not in (0, 1, 2, 3):
            self.bad_exit.append(f"{argv}: {rc}")
        if rc == 2 and len(e.strip().splitlines()) != 1:
            self.multiline.append(f"{argv}: {e[:300]}")

    def to_json(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "exit_codes": dict(sorted(self.codes.items())),
            "tracebacks": len(self.tracebacks),
            "bad_exit_codes": len(self.bad_exit),
            "multi_line_errors": len(self.multiline),
            "examples": (self.tracebacks + self.bad_exit + self.multiline)[:5],
        }


BAD = ["0", "-1", "1e9", "inf", "nan", "", "x", str(2**70), "1000000000", "-0", "2.5", "9" * 400]
NUMERIC = {
    "check": ["--max-examples", "--steps", "--seed"],
    "explore": [
        "--capacity",
        "--blocks",
        "--max-states",
        "--owners",
        "--publishers",
        "--max-queue",
        "--hashes",
        "--partials",
        "--max-batch",
        "--max-refcount",
        "--prompts",
        "--arcs",
        "--max-memory",
        "--workers",
    ],
    "prove": ["--max-k", "--blocks", "--capacity", "--timeout", "--owners"],
    "bmc": ["--depth", "--timeout", "--blocks", "--hashes"],
    "conform": ["--max-ops", "--workloads"],
    "mutants": ["--max-examples"],
}


def argv_of(rng: random.Random, tmp: Path) -> list[str]:
    cmd = rng.choice([*NUMERIC, "quirks", "invariants", "vectors", "replay", "show", "bogus", ""])
    argv = [cmd] if cmd else []
    if cmd in NUMERIC:
        argv += [rng.choice(NUMERIC[cmd]), rng.choice(BAD)]
        if rng.random() < 0.5:
            argv += [
                "--component",
                rng.choice([*EVERY_NAME, "nope", ""]),
            ]
    elif cmd in ("quirks", "invariants"):
        argv += rng.choice(
            [[], ["--component", "nope"], ["--component", rng.choice(EVERY_NAME)], ["--json"], ["--markdown"]]
        )
    elif cmd in ("vectors", "replay", "show"):
        argv += [rng.choice([str(tmp), str(tmp / "missing.json"), "/dev/null", str(tmp / "file.txt")])]
    extra = [
        ["--json"],
        ["--bogus"],
        ["--out", str(tmp / "file.txt")],
        ["--html", str(tmp)],
        ["--junit", ""],
        ["--dot", str(tmp / "file.txt" / "x")],
        ["--revision", "nope"],
        ["--quirk", "nope"],
        [],
    ]
    return argv + rng.choice(extra)


KEYS = [
    "owner",
    "tokens",
    "token",
    "count",
    "reuse",
    "caching",
    "kind",
    "as",
    "state",
    "registry",
    "block",
    "value",
    "publisher",
    "publish_handle",
    "page_size",
    "salt",
    "hash",
    "query",
    "tier",
    "object",
    "clock",
    "blocks",
    "unique_blocks",
    "num_input_tokens",
    "Use",
    "Deref",
    "Destroy",
    "Promote",
    "event_hashes",
]


def small(rng: random.Random) -> Any:
    return rng.choice(
        [
            0,
            1,
            2,
            3,
            [1, 2, 3],
            [0, 1, 2, 3, 4],
            True,
            False,
            "s0",
            "s1",
            "ph0",
            "pub0",
            "device0",
            "host",
            "dup_partial",
            "len",
            {"hash": 0, "parent": None},
            {"F": 1},
            {"P": "p0"},
            [{"F": 0}],
            None,
            jvalue(rng),
        ]
    )


def operations(rng: random.Random, n: int) -> dict[str, Any]:
    """``n`` operations in all, spread over every component, ideal and faithful, in runs of up to
    ten on one system; after each run the system must still answer a snapshot."""
    out: dict[str, Any] = {"operations": 0, "untyped": 0, "changed_on_rejection": 0, "stuck": 0, "examples": []}
    modes = [(comp, faithful) for comp in system_components() for faithful in (False, True)]
    run = 0
    while out["operations"] < n:
        comp, faithful = modes[run % len(modes)]
        run += 1
        s = make_system(comp, {}, None if faithful else [])
        ops = sorted(s.OPS)  # type: ignore[attr-defined]
        for _k in range(min(10, n - out["operations"])):
            op = rng.choice([*ops, "nope"])
            args = (
                jvalue(rng) if rng.random() < 0.3 else {rng.choice(KEYS): small(rng) for _ in range(rng.randint(0, 4))}
            )
            before = json.dumps(s.snapshot(), sort_keys=True, default=str)
            out["operations"] += 1
            try:
                o = s.step(op, args)
            except Exception as e:
                out["untyped"] += 1
                out["examples"].append(f"{comp} {op} {args!r:.80}: {type(e).__name__}: {e}"[:200])
                break
            if o.error is not None and not isinstance(o.error, ModelError):
                out["untyped"] += 1
            if o.error is not None and not faithful:
                if json.dumps(s.snapshot(), sort_keys=True, default=str) != before:
                    out["changed_on_rejection"] += 1
                    out["examples"].append(f"{comp} {op} {args!r:.80}: state changed on {o.error.id}")
        try:
            s.snapshot()
            s.step(sorted(s.OPS)[0], {})  # type: ignore[attr-defined]
        except Exception as e:  # a typed rejection is an answer; anything else is a stuck system
            if not isinstance(e, ModelError):
                out["stuck"] += 1
                out["examples"].append(f"{comp}: stuck after a run: {type(e).__name__}: {e}"[:200])
    return out


class _Flaky:
    """An adapter that answers wrong exactly once, ever (issue 20's lying API verdict)."""

    name = "flaky"

    def __init__(self, at: int) -> None:
        self.calls, self.at = 0, at
        self.inner: Any = None

    def reset(self, config: dict[str, Any]) -> None:
        self.inner = make_system(KV, config, [])

    def step(self, op: str, args: Any) -> dict[str, Any]:
        self.calls += 1
        d: dict[str, Any] = self.inner.step(op, args).observation(None)
        if self.calls == self.at:
            d = {**d, "events": [{"Remove": {"blocks": [999]}}]}
        return d


def undecided(rng: random.Random, tmp: Path) -> dict[str, Any]:
    """Runs that cannot reach a verdict (a solver timeout, settings that run nothing, a flaky
    adapter) and the lying verdicts of issue 20: none may exit 0 or report ok."""
    from kvmodel.api import check_implementation

    t = Tally()
    zero_exit: list[str] = []
    argvs: list[list[str]] = []
    for comp in WITH_SPEC:
        argvs.append(["bmc", "--component", comp, "--faithful", "--depth", "4", "--timeout", "0.001"])
        argvs.append(["prove", "--component", comp, "--timeout", "0.001"])
    argvs += [
        ["bmc", "--component", KV, "--faithful", "--depth", "4", "--timeout", "0"],
        ["bmc", "--component", KV, "--faithful", "--depth", "4", "--timeout", "-1"],
        ["bmc", "--component", KV, "--faithful", "--depth", "4", "--timeout", "inf"],
        ["mutants", "--engine", "hypothesis", "--max-examples", "0"],
        ["mutants", "--engine", "hypothesis", "--max-examples", "-3"],
        ["check", "--component", KV, "--max-examples", "0"],
        ["explore", "--max-states", "3", "--json"],
        # one state: a bound every world passes (the LRU worlds end at 4 canonical states, so
        # a bound of 5 let their search finish, an honest pass the campaign counted as a lie)
        *(["explore", "--component", c, "--max-states", "1"] for c in components.names(lambda c: c.space is not None)),
        # past the memory bound at once (every process holds more than the smallest bound, 1M)
        *(["explore", "--component", c, "--max-memory", "1M"] for c in components.names(lambda c: c.space is not None)),
        ["explore", "--component", KV, "--max-memory", "1M", "--workers", "2", "--json"],
        ["vectors", str(ROOT / "stateful_tests" / "vectors" / "kvmodel-rust-tests.json"), "--component", "nope"],
        ["quirks", "--component", "nope"],
    ]
    for argv in argvs:
        before = t.codes.get(0, 0)
        t.cli(argv)
        if t.codes.get(0, 0) != before:
            zero_exit.append(" ".join(argv))
    # a recorded violation that does not reproduce: text and JSON must agree, and not on 0
    tr = traces.record(KV, {"max_capacity": 2}, [], [("process", {"Use": [{"F": 0}]})])
    tr["violation"] = {"invariant": "kv.capacity_bound", "step": 0, "message": "recorded"}
    f = tmp / "lying.json"
    f.write_text(json.dumps(tr))
    codes = []
    for argv in (["replay", str(f)], ["replay", str(f), "--json"]):
        before = dict(t.codes)
        t.cli(argv)
        codes.append(next(c for c in t.codes if t.codes[c] != before.get(c, 0)))
    if 0 in codes:
        zero_exit.append("replay of a violation that does not reproduce")
    api_ok = 0
    for at in rng.sample(range(1, 400), 20):
        rep = check_implementation(_Flaky(at), KV, workloads=50, seed=at)
        api_ok += rep.ok
    return {
        **t.to_json(),
        "exit_0_when_undecided": len(zero_exit),
        "zero_exit_examples": zero_exit[:5],
        "replay_text_json_codes": codes,
        "replay_text_json_agree": codes[0] == codes[1],
        "flaky_adapters": 20,
        "flaky_adapters_reported_ok": api_ok,
    }


# every other component with an explorer world: the other pools the page draws
DRAWN = tuple(n for n in components.names(lambda c: c.space is not None) if n != KV)


SUPERVISION_ADAPTERS = """
import sys, time
from unittest import mock
from kvmodel.api import ModelAdapter, check_implementation
kind, component = sys.argv[1], sys.argv[2]
class A(ModelAdapter):
    def __init__(self):
        super().__init__(component); self.n = 0
    def step(self, op, args):
        self.n += 1
        if self.n == 3:
            if kind == "exit0": raise SystemExit(0)
            if kind == "keyboard": raise KeyboardInterrupt
            if kind == "generator": raise GeneratorExit
            if kind == "hang": time.sleep(3600)
        obs = super().step(op, args)
        if kind == "any": obs["returns"] = mock.ANY
        if kind == "magicmock": obs["returns"] = mock.MagicMock()
        if kind == "set": obs["returns"] = {1, 2}
        if kind == "bool" and obs.get("returns") == 1: obs["returns"] = True
        return obs
r = check_implementation(A(), component, workloads=20, step_timeout=1)
print(r.verdict, r.divergence.what if r.divergence else None)
sys.exit(0 if r.verdict == "violation" else 5)
"""


def supervision(out_json: str | None) -> int:
    """The issue-57 campaign: every case a process with a bound; the figures."""
    import os
    import signal
    import socket
    import subprocess
    import threading

    kv = [sys.executable, "-m", "kvmodel"]
    children = str(ROOT / "tools" / "harness_children.py")
    # the children and adapters speak the default component (the KV manager); the long search is
    # of the first component whose world has requests (G1), on two workers
    g1 = next(c.name for c in components.registered() if any("owners" in str(o) for o in c.options))
    rows: list[dict[str, Any]] = []

    def run(
        name: str,
        argv: list[str],
        want: int,
        bound: float,
        *,
        sig: int | None = None,
        after: float = 0,
        outputs: tuple[Path, ...] = (),
        one_line: bool = True,
        env: dict[str, str] | None = None,
    ) -> None:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True, env=env,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
        if sig is not None:
            time.sleep(after)
            p.send_signal(sig)
            t0 = time.monotonic()
        hang = False
        try:
            _, err = p.communicate(timeout=bound)
        except subprocess.TimeoutExpired:
            hang = True
            os.killpg(p.pid, signal.SIGKILL)
            _, err = p.communicate()
        took = time.monotonic() - t0
        left: list[str] = []
        for _ in range(30):
            left = subprocess.run(["pgrep", "-g", str(p.pid)], capture_output=True, text=True).stdout.split()
            if not left:
                break
            time.sleep(0.1)
        if left:
            subprocess.run(["pkill", "-KILL", "-g", str(p.pid)])
        lines = err.strip().splitlines()
        tb = "Traceback" in err or (p.returncode in (2, 130, 143) and one_line and len(lines) > 1)
        stale = any(o.exists() for o in outputs) if p.returncode != 0 else False
        stale = stale or any(f.name.endswith(".tmp") for o in outputs if o.parent.exists() for f in o.parent.iterdir())
        dishonest = p.returncode != want and not hang
        rows.append({"case": name, "exit": p.returncode, "expected": want, "dishonest": dishonest, "hang": hang,
                     "seconds": round(took, 2), "left_behind": len(left), "traceback": tb,
                     "stale": stale, "stderr": err.strip()[-200:]})  # fmt: skip
        print(f"{name:44} exit {p.returncode} (want {want}) {took:6.1f}s left {len(left)}"
              f"{' TRACEBACK' if tb else ''}{' STALE' if stale else ''}{' HANG' if hang else ''}",
              flush=True)  # fmt: skip

    expect = {"honest": 0, "bool-for-int": 1, "float-for-int": 1, "no-read": 1, "close-stdout": 1, "orphan": 1,
              "fork-sleepers": 0, "stderr-flood": 0, "hang": 1, "evil-name": 0, "many-empties": 1}  # fmt: skip
    for mode, want in expect.items():
        run(f"harness child: {mode}", [*kv, "conform", "--target", "exec", "--component", KV, "--workloads",
            "20", "--step-timeout", "2", "--", sys.executable, children, mode, KV], want, 120)  # fmt: skip
    run("harness child: a shell wrapper's grandchildren", [*kv, "conform", "--target", "exec", "--component",
        KV, "--workloads", "20", "--", "sh", "-c", f"sleep 90 & exec {sys.executable} {children}"
        f" fork-sleepers {KV}"], 0, 120)  # fmt: skip
    for kind in ("exit0", "keyboard", "generator", "hang", "any", "magicmock", "set", "bool"):
        run(f"adapter: {kind}", [sys.executable, "-c", SUPERVISION_ADAPTERS, kind, KV], 0, 60)
    explore = [*kv, "explore", "--component", g1, "--owners", "3", "--capacity", "4", "--workers", "2"]
    run("signal: SIGINT to explore --workers 2", explore, 130, 3, sig=signal.SIGINT, after=4)
    run("signal: SIGTERM to explore --workers 2", explore, 143, 3, sig=signal.SIGTERM, after=4)
    run("signal: SIGINT to check", [*kv, "check", "--component", KV], 130, 3, sig=signal.SIGINT, after=4)
    run("signal: SIGTERM to conform exec (hung child)", [*kv, "conform", "--target", "exec", "--component",
        KV, "--step-timeout", "60", "--", sys.executable, children, "hang", KV], 143, 3,
        sig=signal.SIGTERM, after=4)  # fmt: skip
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        run("signal: SIGINT to swarm", [*kv, "swarm", "--workers", "2", "--tasks", "50", "--out", str(tmp / "sw")],
            130, 3, sig=signal.SIGINT, after=12)  # fmt: skip
        for mode in ("garbage", "silent", "close"):
            srv = socket.socket()
            srv.bind(("127.0.0.1", 0))
            srv.listen(4)
            held: list[Any] = []

            def serve(srv: socket.socket = srv, mode: str = mode, held: list[Any] = held) -> None:
                with contextlib.suppress(OSError):
                    while True:
                        c, _ = srv.accept()
                        if mode == "garbage":
                            c.sendall(b"\xfe" * 4096)
                        elif mode == "close":
                            c.close()
                        else:
                            held.append(c)

            threading.Thread(target=serve, daemon=True).start()
            run(f"scheduler: {mode} peer", [*kv, "swarm", "--scheduler", f"tcp://127.0.0.1:{srv.getsockname()[1]}",
                "--tasks", "2", "--out", str(tmp / "sw2")], 2, 40)  # fmt: skip
            srv.close()
        small = tmp / "small"
        small.mkdir()
        mounted = (
            os.geteuid() == 0
            and subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(small)], capture_output=True
            ).returncode
            == 0
        )
        try:
            junit = small / "junit.xml"
            junit.write_text("<testsuites failures='0' errors='0'/>")
            if mounted:
                fd = os.open(small / "filler", os.O_WRONLY | os.O_CREAT)
                with contextlib.suppress(OSError):
                    while True:
                        os.write(fd, b"x" * 4096)
                os.close(fd)
                html = small / "r.html"
            else:
                html = Path("/dev/full")
            run("full disk: check --html --junit", [*kv, "check", "--component", KV, "--ideal",
                "--html", str(html), "--junit", str(junit), "--out", str(tmp / "t")], 2, 300,
                outputs=(junit,) + ((html,) if mounted else ()))  # fmt: skip
        finally:
            if mounted:
                subprocess.run(["umount", str(small)])
        big = tmp / "big.json"
        steps = [{"op": "process", "args": {"Use": [{"F": i} for i in range(4096)]}} for _ in range(300)]
        big.write_text(json.dumps({"format": "kvmodel-trace/1", "component": KV, "config": {"max_capacity": 4},
                                   "quirks": [], "steps": steps}))  # fmt: skip
        run("heavy trace: 300 steps of 4,096 blocks", [*kv, "replay", str(big)], 2, 60)
        big.write_text(json.dumps({"format": "kvmodel-trace/1", "component": KV, "config": {"max_capacity": 10**9},
                                   "quirks": [], "steps": steps[:1]}))  # fmt: skip
        run("heavy trace: capacity 10^9", [*kv, "replay", str(big)], 2, 60)
        env = dict(os.environ, PYTHONIOENCODING="ascii")
        run("encoding: quirks under PYTHONIOENCODING=ascii", [*kv, "quirks"], 0, 60, env=env)
    figures = {
        "cases": len(rows),
        "dishonest": sum(r["dishonest"] for r in rows),
        "hangs": sum(r["hang"] for r in rows),
        "left_behind": sum(r["left_behind"] for r in rows),
        "tracebacks": sum(r["traceback"] for r in rows),
        "stale_outputs": sum(r["stale"] for r in rows),
    }
    print(json.dumps(figures))
    if out_json:
        jsonio.write_text(out_json, json.dumps({"figures": figures, "cases": rows}, indent=1) + "\n")
    bad = figures["dishonest"] + figures["hangs"] + figures["left_behind"] + figures["tracebacks"]
    return 1 if bad + figures["stale_outputs"] else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--supervision", action="store_true", help="the issue-57 campaign instead (see above)")
    a = ap.parse_args()
    if a.supervision:
        return supervision(a.json)
    rng = random.Random(a.seed)
    n_traces, n_vectors, n_args, n_ops = (int(x * a.scale) for x in (2253, 914, 805, 9115))
    t0 = time.perf_counter()
    base_trace = traces.record(
        KV,
        {"max_capacity": 2},
        ["promote_leaves_inactive_copy"],
        [
            ("process", {"Use": [{"F": 0}, {"P": "p0"}]}),
            ("process", {"Promote": {"uuid": "p0", "hash": 0, "parent_hash": None}}),
        ],
    )
    # and a trace of each other pool the page draws (the G1 backends, the registry, the LRU)
    base_traces = [base_trace, *(traces.walk(c) for c in DRAWN)]
    base_vectors = json.loads((ROOT / "stateful_tests" / "vectors" / "kvmodel-rust-tests.json").read_text())
    base_vectors["vectors"] = base_vectors["vectors"][:3]
    # and each of Dynamo's own tests as a vector, alone
    dynamo = json.loads((ROOT / "stateful_tests" / "vectors" / "dynamo-test-vectors.json").read_text())["vectors"]
    vector_bases = [base_vectors, *({"vectors": [v]} for v in dynamo)]
    res: dict[str, Any] = {"seed": a.seed}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        (tmp / "file.txt").write_text("x")
        tt = Tally()
        for i in range(n_traces):
            doc = mutate(rng, base_trace if i % 2 == 0 else rng.choice(base_traces))
            f = tmp / f"t{i % 8}.json"
            f.write_bytes(raw_variants(rng, doc) if rng.random() < 0.25 else json.dumps(doc).encode())
            tt.cli(
                rng.choice(
                    [
                        ["show", str(f)],
                        ["show", str(f), "--html", str(tmp / "p.html")],
                        ["replay", str(f)],
                        ["replay", str(f), "--json"],
                        ["replay", str(f), "--brief"],
                    ]
                )
            )
        res["traces"] = {"files": n_traces, **tt.to_json()}
        tv = Tally()
        for i in range(n_vectors):
            doc = mutate(rng, base_vectors if i % 2 == 0 else rng.choice(vector_bases))
            f = tmp / f"v{i % 8}.json"
            f.write_bytes(raw_variants(rng, doc) if rng.random() < 0.2 else json.dumps(doc).encode())
            tv.cli(["vectors", str(f)])
        res["vectors"] = {"files": n_vectors, **tv.to_json()}
        ta = Tally()
        for _ in range(n_args):
            ta.cli(argv_of(rng, tmp))
        res["arguments"] = {"argument_lists": n_args, **ta.to_json()}
        res["undecided"] = undecided(rng, tmp)
    res["operations"] = operations(rng, n_ops)
    res["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    res["seconds"] = round(time.perf_counter() - t0, 1)
    text = json.dumps(res, indent=2, sort_keys=True)
    print(text)
    if a.json:
        jsonio.write_text(a.json, text + "\n")
    bad = sum(
        res[k]["tracebacks"] + res[k]["bad_exit_codes"] + res[k]["multi_line_errors"]
        for k in ("traces", "vectors", "arguments")
    )
    bad += res["operations"]["untyped"] + res["operations"]["changed_on_rejection"] + res["operations"]["stuck"]
    u = res["undecided"]
    bad += u["tracebacks"] + u["exit_0_when_undecided"] + u["flaky_adapters_reported_ok"]
    bad += not u["replay_text_json_agree"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
