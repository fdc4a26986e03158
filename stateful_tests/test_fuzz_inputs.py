"""Bad input never crashes (issue "Honest verdicts and bad input that never crashes").

Hypothesis generates malformed trace files, vector files, argument lists and model operations;
the CLI runs in-process. Every run must end with an exit code in {0, 1, 2, 3}, no traceback, and
exactly one stderr line when it exits 2; every model operation with arbitrary JSON arguments
raises only typed errors and, on the ideal model, leaves the state unchanged when it does.
Sizes: a few hundred inputs in the ``ci`` profile, over 2,000 in ``deep``
(``HYPOTHESIS_PROFILE=deep``). ``docs/reliability.md`` has the campaign and the exit codes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvmodel import cli, components, traces
from kvmodel.model.errors import ModelError
from kvmodel.systems import make_system, system_components

DEEP = os.environ.get("HYPOTHESIS_PROFILE") == "deep"


def budget(ci: int) -> Any:
    return settings(
        max_examples=ci * 10 if DEEP else ci,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def boom(*_: Any) -> None:
        raise TimeoutError(f"took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), time_limit(120):
        try:
            rc = cli.main(argv)
        except SystemExit as e:  # --help and friends
            rc = int(e.code) if isinstance(e.code, int) else 2
    return rc, out.getvalue(), err.getvalue()


def assert_clean(argv: list[str], rc: int, err: str) -> None:
    assert rc in (0, 1, 2, 3), (argv, rc, err)
    assert "Traceback" not in err, (argv, err)
    if rc == 2:
        assert len(err.strip().splitlines()) == 1, (argv, err)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=12,
)


def _trace() -> dict[str, Any]:
    ops = [
        ("process", {"Use": [{"F": 0}, {"P": "p0"}]}),
        ("process", {"Deref": [{"F": 0}]}),
        ("process", {"Promote": {"uuid": "p0", "hash": 0, "parent_hash": None}}),
    ]
    return traces.record("kv_manager", {"max_capacity": 2}, ["promote_leaves_inactive_copy"], ops)


# the traces the HTML page draws differently (``pictures._rows``): one per kind of pool
_DRAWN = tuple(n for n in components.names(lambda c: c.space is not None) if n != components.default().name)


def _paths(x: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(x, dict):
        for k, v in x.items():
            out += _paths(v, (*path, k))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            out += _paths(v, (*path, i))
    return out


@st.composite
def mutated(draw: Any, base: Any) -> Any:
    """``base`` with a few nodes replaced by arbitrary JSON, deleted, or duplicated."""
    doc = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        p = draw(st.sampled_from(paths))
        parent: Any = doc
        for k in p[:-1]:
            parent = parent[k]
        how = draw(st.sampled_from(["replace", "delete", "wrap"]))
        if how == "replace":
            parent[p[-1]] = draw(JSON)
        elif how == "delete" and isinstance(parent, dict):
            del parent[p[-1]]
        else:
            parent[p[-1]] = [parent[p[-1]]]
    return doc


SPECIAL_FILES = [
    b"",
    b"\xff\xfe not utf-8",
    b'{"format": "kvmodel-trace/1", "component": "kv_manager", "config": {}, "quirks": ["\\ud800"], "steps": []}',
    b'{"format": "kvmodel-trace/1", "component": "kv_manager", "config": {"max_capacity": '
    + b"9" * 5000
    + b'}, "quirks": [], "steps": []}',
    b"[" * 2000 + b"]" * 2000,
    b'{"a": NaN}',
    b"null",
]


def _write(tmp: Path, name: str, data: Any) -> Path:
    p = tmp / name
    p.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())
    return p


@pytest.mark.parametrize("data", SPECIAL_FILES, ids=range(len(SPECIAL_FILES)))
def test_special_trace_and_vector_files(tmp_path: Path, data: bytes) -> None:
    f = _write(tmp_path, "x.json", data)
    for argv in (["show", str(f)], ["replay", str(f), "--json"], ["vectors", str(f)]):
        rc, _, err = run_cli(argv)
        assert_clean(argv, rc, err)
        assert rc == 2 and str(f) in err


def test_files_that_report_no_size_are_read_only_up_to_the_limit(tmp_path: Path, monkeypatch: Any) -> None:
    """A device, a pipe or a ``/proc`` file has no size to check: ``/dev/zero`` once made
    ``replay`` read until the machine killed it. Each is read at most the limit far."""
    from kvmodel import jsonio

    monkeypatch.setattr(jsonio, "MAX_BYTES", 1024)
    for argv in (["show", "/dev/zero"], ["replay", "/dev/zero", "--json"], ["vectors", "/dev/zero"]):
        rc, _, err = run_cli(argv)
        assert_clean(argv, rc, err)
        assert rc == 2 and "/dev/zero: larger than" in err
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    doc = b'{"format": "kvmodel-trace/1", "steps": [' + b"{}, " * 1000 + b"{}]}"

    def feed() -> None:
        with open(fifo, "wb") as w:
            try:
                w.write(doc)
            except BrokenPipeError:
                pass  # the reader stopped at the limit

    writer = threading.Thread(target=feed)
    writer.start()
    rc, _, err = run_cli(["replay", str(fifo)])
    writer.join(timeout=10)
    assert_clean(["replay", str(fifo)], rc, err)
    assert rc == 2 and f"{fifo}: larger than" in err


TRACE_COMMANDS = ["show", "show-html", "replay", "replay-json"]


def _trace_command(cmd: str, f: Path, tmp: Path) -> list[str]:
    """The command line of one of ``TRACE_COMMANDS`` on the trace file ``f``."""
    return {
        "show": ["show", str(f)],
        "show-html": ["show", str(f), "--html", str(tmp / "p.html")],
        "replay": ["replay", str(f)],
        "replay-json": ["replay", str(f), "--json"],
    }[cmd]


@budget(120)
@given(doc=mutated(_trace()), cmd=st.sampled_from(TRACE_COMMANDS))
def test_malformed_traces_never_crash(tmp_path_factory: Any, doc: Any, cmd: str) -> None:
    tmp = tmp_path_factory.mktemp("t")
    f = _write(tmp, "t.json", doc)
    argv = _trace_command(cmd, f, tmp)
    rc, _, err = run_cli(argv)
    assert_clean(argv, rc, err)


@budget(120)
@given(
    data=st.data(),
    component=st.sampled_from(_DRAWN),
    cmd=st.sampled_from(TRACE_COMMANDS),
)
def test_malformed_traces_of_every_pool_never_crash(tmp_path_factory: Any, data: Any, component: str, cmd: str) -> None:
    """The same for a trace of each other component whose states the page draws (the G1 pools,
    the registry, the LRU order): a damaged recorded state is shown as it is, a damaged step is
    replayed to a verdict or refused in one line, never a traceback."""
    doc = data.draw(mutated(_BASES[component]))
    tmp = tmp_path_factory.mktemp("t")
    f = _write(tmp, "t.json", doc)
    argv = _trace_command(cmd, f, tmp)
    rc, _, err = run_cli(argv)
    assert_clean(argv, rc, err)


_BASES = {c: traces.walk(c) for c in _DRAWN}


@pytest.mark.parametrize(
    "where, value",
    [
        (("steps", 1, "observe", "state", "inactive"), None),
        (("config", "max_capacity"), None),
        (("config", "max_capacity"), 10**12),
        (("config", "max_capacity"), 2**70),
    ],
    ids=["state-not-a-list", "capacity-null", "capacity-10e12", "capacity-2e70"],
)
def test_show_html_draws_a_damaged_trace_in_bounded_space(tmp_path: Path, where: tuple[Any, ...], value: Any) -> None:
    """Regressions (the deep fuzz profile): a recorded state whose inactive list is null and a
    capacity that is null or huge crashed the page's pool drawing (or would allocate a cell per
    slot); now the page is written, its size bounded, and the state shown as it is."""
    doc = json.loads(json.dumps(_trace()))
    node: Any = doc
    for k in where[:-1]:
        node = node[k]
    node[where[-1]] = value
    f = _write(tmp_path, "t.json", doc)
    rc, _, err = run_cli(["show", str(f), "--html", str(tmp_path / "p.html")])
    assert_clean(["show"], rc, err)
    assert rc == 0 and (tmp_path / "p.html").stat().st_size < 200_000


@pytest.mark.parametrize("component", _DRAWN)
def test_a_config_the_constructor_panics_on_is_a_malformed_trace(tmp_path: Path, component: str) -> None:
    """Regression (a randomised fuzz run): a trace whose configuration makes the real
    constructor panic (the native backend's ``block_size must be > 0``) escaped ``replay`` as a
    traceback; every such configuration value is now refused in one line naming the file."""
    base = _BASES[component]
    for k in base["config"]:
        for bad in (0, -1, None, "x", 1.5, 10**30):
            doc = json.loads(json.dumps(base))
            doc["config"][k] = bad
            f = _write(tmp_path, "t.json", doc)
            argv = ["replay", str(f)]
            rc, _, err = run_cli(argv)
            assert_clean(argv, rc, err)
            assert rc != 2 or str(f) in err, (k, bad, err)


def _vectors() -> dict[str, Any]:
    return {
        "vectors": [
            {
                "name": "v",
                "component": "old_kv_manager",
                "constructor": {"max_capacity": 2, "block_size": 4, "response_channel": True},
                "steps": [
                    {"op": "process", "args": {"Use": [{"F": 0}]}, "expect": {"returns": True}},
                    {"op": "repeat", "args": {"times": 2, "body": "x = 1"}},
                ],
            },
            {
                "name": "k",
                "component": "kvbm_backend",
                "constructor": {"max_capacity": 2, "block_size": 4},
                "steps": [{"op": "observe", "expect": {"num_active_blocks": 0}}],
            },
        ]
    }


@budget(80)
@given(doc=mutated(_vectors()))
def test_malformed_vector_files_never_crash(tmp_path_factory: Any, doc: Any) -> None:
    f = _write(tmp_path_factory.mktemp("v"), "v.json", doc)
    rc, _, err = run_cli(["vectors", str(f)])
    assert_clean(["vectors", str(f)], rc, err)


# Dynamo's unit tests as vectors (the shared file's copy): one vector of each, to damage
_DYNAMO = json.loads((Path(__file__).parent / "vectors" / "dynamo-test-vectors.json").read_text())["vectors"]


@budget(120)
@given(data=st.data(), i=st.integers(0, len(_DYNAMO) - 1))
def test_damaged_dynamo_vectors_never_crash(tmp_path_factory: Any, data: Any, i: int) -> None:
    """Each of Dynamo's own tests as a vector (every component, constructor and notation the
    vectors use), with a few nodes replaced, deleted or wrapped: a verdict per vector or one line
    naming the file, never a traceback."""
    doc = data.draw(mutated({"vectors": [_DYNAMO[i]]}))
    f = _write(tmp_path_factory.mktemp("v"), "v.json", doc)
    rc, _, err = run_cli(["vectors", str(f)])
    assert_clean(["vectors", str(f)], rc, err)


BAD = ["0", "-1", "1e9", "inf", "nan", "", "x", str(2**70), "1000000000"]
NUMERIC = {
    "check": ["--max-examples", "--steps"],
    "explore": ["--capacity", "--blocks", "--max-states", "--owners", "--publishers", "--max-queue", "--hashes"],
    "prove": ["--max-k", "--blocks", "--capacity", "--timeout"],
    "bmc": ["--depth", "--timeout", "--blocks"],
    "conform": ["--max-ops", "--workloads"],
    "mutants": ["--max-examples"],
}
COMPONENT_NAMES = ["kv", "registry", "g1", "kvbm", "lru_evictor_counter", "nope", ""]


@st.composite
def argument_lists(draw: Any) -> list[str]:
    """Expensive commands always carry one bad value (they must stop at it); the cheap ones are
    drawn freely, typos included."""
    cmd = draw(st.sampled_from([*NUMERIC, "quirks", "invariants", "vectors", "nonsense"]))
    argv = [cmd]
    if cmd in NUMERIC:
        argv += [draw(st.sampled_from(NUMERIC[cmd])), draw(st.sampled_from(BAD))]
        if draw(st.booleans()):
            argv += ["--component", draw(st.sampled_from(COMPONENT_NAMES))]
    elif cmd in ("quirks", "invariants"):
        if draw(st.booleans()):
            argv += ["--component", draw(st.sampled_from(COMPONENT_NAMES))]
        if draw(st.booleans()):
            argv += ["--json"]
    elif cmd == "vectors":
        argv += [draw(st.sampled_from(["/nonexistent.json", "/", "stateful_tests/vectors/kvmodel-rust-tests.json"]))]
        if draw(st.booleans()):
            argv += ["--component", draw(st.sampled_from(["nope", "kvbm_backend", ""]))]
    if draw(st.booleans()):
        argv += [draw(st.sampled_from(["--json", "--bogus", "--help", "--out", "--html"]))]
    return argv


@budget(120)
@given(argv=argument_lists())
def test_bad_arguments_exit_2_with_one_line(argv: list[str]) -> None:
    rc, _, err = run_cli(argv)
    assert_clean(argv, rc, err)


@pytest.mark.parametrize(
    "argv",
    [
        ["explore", "--component", "kv", "--hashes", "2"],
        ["explore", "--component", "g1", "--capacity", "0"],
        ["explore", "--owners", "1000000000", "--component", "g1"],
        ["prove", "--max-k", "0"],
        ["bmc", "--timeout", "0"],
        ["bmc", "--timeout", "inf"],
        ["check", "--max-examples", "0"],
        ["check", "--steps", "0"],
        ["check", "--html", ""],
        ["conform", "--max-ops", "1000000000"],
        ["explore", "--max-states", "-1"],
        ["explore", "--max-queue", "-1", "--component", "lru_evictor_wallclock"],
        ["vectors", "stateful_tests/vectors/kvmodel-rust-tests.json", "--component", "nope"],
        ["quirks", "--component", "nope"],
        ["invariants", "--component", "nope"],
        ["mutants", "--engine", "hypothesis", "--max-examples", "0"],
        ["explore", "--mark", "kv.store_only_new"],  # no graph to mark it in
        ["explore", "--mark", "nope", "--dot", "/tmp/kvmodel-unused.dot"],  # no such invariant
    ],
)
def test_each_reported_bad_argument_is_refused(argv: list[str]) -> None:
    rc, _, err = run_cli(argv)
    assert rc == 2, (argv, rc, err)
    assert_clean(argv, rc, err)


def test_output_paths_are_checked_before_any_work(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    t = _write(tmp_path, "t.json", _trace())
    for argv in (
        ["show", str(t), "--html", str(tmp_path)],  # a directory
        ["show", str(t), "--html", str(f / "p.html")],  # under a file
        ["explore", "--component", "lru_evictor_counter", "--out", str(f)],  # a file as a directory
        ["check", "--component", "lru_evictor_counter", "--junit", str(tmp_path)],
        ["replay", str(t), "--itf", str(f / "x")],
    ):
        rc, _, err = run_cli(argv)
        assert rc == 2, (argv, rc, err)
        assert_clean(argv, rc, err)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_write_that_fails_names_its_file(tmp_path: Path) -> None:
    """A full disk (``/dev/full``) found only when writing: one line naming the file."""
    t = _write(tmp_path, "t.json", _trace())
    for argv in (
        ["explore", "--component", "lru_evictor_counter", "--dot", "/dev/full"],
        ["replay", str(t), "--itf", "/dev/full"],
        ["show", str(t), "--html", "/dev/full"],
    ):
        rc, _, err = run_cli(argv)
        assert rc == 2, (argv, rc, err)
        assert_clean(argv, rc, err)
        assert "/dev/full: cannot write" in err, err


SMALL = st.one_of(
    st.integers(0, 3),
    st.lists(st.integers(0, 5), max_size=6),
    st.booleans(),
    st.sampled_from(["s0", "s1", "ph0", "pub0", "device0", "host", "r0", "dup_partial", "hash_two_plhs", "len"]),
    st.sampled_from([{"hash": 0, "parent": None}, {"F": 1}, {"P": "p0"}, [{"F": 0}], None]),
    JSON,
)
KEYS = [
    "owner", "tokens", "token", "count", "reuse", "caching", "kind", "as", "state", "registry", "block",
    "value", "publisher", "publish_handle", "page_size", "salt", "hash", "query", "tier", "object", "clock",
    "blocks", "unique_blocks", "num_input_tokens", "Use", "Deref", "Destroy", "Promote", "event_hashes",
]  # fmt: skip
ARGS = st.one_of(JSON, st.dictionaries(st.sampled_from(KEYS), SMALL, max_size=4))


@pytest.mark.parametrize("component", system_components())
def test_model_operations_raise_only_typed_errors(component: str) -> None:
    probe = make_system(component, {}, [])
    ops = sorted(probe.OPS)  # type: ignore[attr-defined]

    @budget(60)
    @given(
        faithful=st.booleans(),
        steps=st.lists(st.tuples(st.sampled_from([*ops, "nope"]), ARGS), min_size=1, max_size=12),
    )
    def run(faithful: bool, steps: list[tuple[str, Any]]) -> None:
        s = make_system(component, {}, None if faithful else [])
        for op, args in steps:
            before = json.dumps(s.snapshot(), sort_keys=True, default=str)
            out = s.step(op, args)  # an untyped exception fails the test here
            if out.error is not None:
                assert isinstance(out.error, ModelError)
                if not faithful:  # the ideal model has no mutate-before-panic path
                    assert json.dumps(s.snapshot(), sort_keys=True, default=str) == before, (op, args)

    run()
