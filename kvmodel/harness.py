"""The language-neutral harness: an implementation in any language, checked against the model
over newline-delimited JSON on its standard input and output (``docs/harness.md``; the messages'
JSON Schema is ``kvmodel/schemas/harness-v1.json``).

kvmodel starts the command and writes one request per line; the implementation answers each with
one line::

    {"type":"hello","protocol":"kvmodel-harness/1"} -> {"type":"hello","protocol":"kvmodel-harness/1","name":"..."}
    {"type":"reset","config":{...}}                  -> {"ok":true}
    {"type":"step","op":"insert","args":{...}}       -> {"returns":...,"events":[...]}
                                                        or {"error":"...","events":[...]}
    {"type":"bye"}                                   -> (the process exits 0)

:class:`ExecAdapter` is that client: an :class:`kvmodel.api.Adapter` whose calls go to the child
process. A child that exits, writes a line that is not a response, or does not answer within the
step timeout is a divergence of kind ``crash``, ``malformed`` or ``timeout`` carrying the tail of
its standard error; the child is then killed and the next ``reset`` starts a new one. A child that
cannot be started or does not answer ``hello`` is a :class:`HarnessError` (no verdict).

:func:`serve` is the other side for Python: it turns any adapter into a harness process
(``python -m kvmodel.harness --adapter FILE.py:NAME`` or ``--component C`` for the model itself).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import importlib.util
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from kvmodel.exact import printable

PROTOCOL = "kvmodel-harness/1"
MAX_LINE = 1 << 22  # bytes: a longer response line is malformed (no response may exhaust memory)
MAX_CONTAINERS = 200_000  # JSON objects and arrays in one response: each costs ~100 bytes parsed
POLL = 0.05  # seconds between looks at whether the child is still running
EOF_WAIT = 1.0  # seconds a child that closed its output has to exit
STDERR_TAIL = 2000  # characters of the child's standard error kept in a divergence
HELLO_TIMEOUT = 30.0  # seconds for the child to start and answer hello
# ``state``: the implementation's state in the model's snapshot shape, read by invariant mode
# (docs/api.md); optional, and ignored by equality mode
RESPONSE_KEYS = frozenset({"returns", "error", "events", "state"})


class HarnessError(Exception):
    """The harness cannot be used at all: the command does not start, or does not answer hello."""


class HarnessFailure(Exception):
    """The child failed one call: ``divergence_kind`` is ``crash``, ``malformed`` or ``timeout``."""

    def __init__(self, kind: str, message: str, stderr_tail: str = "") -> None:
        self.divergence_kind = kind
        self.stderr_tail = stderr_tail
        text = message + (f"; stderr: {stderr_tail}" if stderr_tail else "")
        super().__init__(text)


def schema() -> dict[str, Any]:
    """The protocol's JSON Schema (requests and responses)."""
    path = Path(__file__).parent / "schemas" / "harness-v1.json"
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def check_response(msg: Any) -> str | None:
    """Why ``msg`` is not a step response (``None``: it is one): an object with ``returns`` or
    ``error`` (a string), and optionally ``events`` (a list of objects) and ``state``, nothing else."""
    if not isinstance(msg, dict):
        return f"a response is a JSON object, got {type(msg).__name__}"
    extra = sorted(set(msg) - RESPONSE_KEYS)
    if extra:
        return f"unknown response key {extra[0]!r:.40} (known: error, events, returns, state)"
    if ("returns" in msg) == ("error" in msg):
        return "a response has exactly one of 'returns' and 'error'"
    if "error" in msg and not isinstance(msg["error"], str):
        return f"'error' must be a string, got {msg['error']!r:.60}"
    ev = msg.get("events", [])
    if not isinstance(ev, list) or not all(isinstance(e, dict) for e in ev):
        return f"'events' must be a list of objects, got {ev!r:.60}"
    return None


_LIVE: weakref.WeakSet[ExecAdapter] = weakref.WeakSet()


def kill_all() -> None:
    """Kill every harness child still running, with its process group (at exit, on a signal)."""
    for a in list(_LIVE):
        a._kill()


atexit.register(kill_all)


class _Tail:
    """The last ``limit`` bytes of a stream, read by a daemon thread (a child's standard error:
    only its tail is ever shown, so no more is kept, however much it writes)."""

    def __init__(self, fd: int, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, args=(fd,), name="kvmodel-harness-stderr", daemon=True)
        self.thread.start()

    def _read(self, fd: int) -> None:
        try:
            while chunk := os.read(fd, 1 << 16):
                with self.lock:
                    self.data += chunk
                    if len(self.data) > 2 * self.limit:
                        del self.data[: len(self.data) - self.limit]
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)

    def text(self, wait: float = 0.0) -> str:
        if wait:
            self.thread.join(wait)
        with self.lock:
            return bytes(self.data[-self.limit :]).decode("utf-8", "replace").strip()


class ExecAdapter:
    """An adapter whose implementation is a child process speaking the harness protocol, run
    under supervision: the child starts in a session (and process group) of its own, and every
    kill takes the whole group, so a shell wrapper's or a launcher's grandchildren go with it;
    every write and every read is bounded by the step timeout (a child that answers without
    reading, or reads without answering, is a ``timeout``); a child that exits is a ``crash`` even
    while a grandchild still holds its pipes; a child that closes its output and keeps running is a
    ``crash`` after a bounded wait; only the last :data:`STDERR_TAIL` characters of its standard
    error are kept; a child that timed out once is *stuck* and is not asked again in the run
    (shrinking skips it). Every live child is killed at interpreter exit and by kvmodel's signal
    handling.

    ``argv``: the command; ``step_timeout``: seconds per answer (``None``: no limit)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        step_timeout: float | None = 10.0,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        if not argv:
            raise HarnessError("no command to run")
        self.argv = list(argv)
        self.step_timeout = step_timeout
        self.cwd, self.env = cwd, env
        self.name = printable(Path(self.argv[0]).name)
        self.proc: subprocess.Popen[bytes] | None = None
        self.err: _Tail | None = None
        self.buf = b""
        self.starts = 0
        self.stuck = False

    # -- the child
    def start(self) -> None:
        """Start the child and check its hello (:class:`HarnessError` when that fails)."""
        self._kill()
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.cwd,
                env=self.env,
                start_new_session=True,
            )
        except (OSError, ValueError) as e:
            raise HarnessError(
                f"cannot start {printable(self.argv[0])!r}: {getattr(e, 'strerror', None) or e}"
            ) from None
        _LIVE.add(self)
        assert self.proc.stdin is not None and self.proc.stderr is not None
        os.set_blocking(self.proc.stdin.fileno(), False)
        self.err = _Tail(os.dup(self.proc.stderr.fileno()), STDERR_TAIL)
        self.proc.stderr.close()
        self.buf = b""
        self.starts += 1
        try:
            hello = self._ask({"type": "hello", "protocol": PROTOCOL}, HELLO_TIMEOUT)
        except HarnessFailure as e:
            self._kill()
            raise HarnessError(f"{printable(self.argv[0])!r} did not answer hello: {e}") from None
        if not isinstance(hello, dict) or hello.get("type") != "hello" or hello.get("protocol") != PROTOCOL:
            self._kill()
            said = printable(json.dumps(hello), 200)
            raise HarnessError(f"{printable(self.argv[0])!r} answered hello with {said} (protocol {PROTOCOL})")
        if isinstance(hello.get("name"), str) and hello["name"]:
            self.name = printable(hello["name"])

    def stderr_tail(self, wait: float = 0.0) -> str:
        return "" if self.err is None else self.err.text(wait)

    def _fail(self, kind: str, message: str) -> HarnessFailure:
        if kind == "timeout":
            self.stuck = True
        self._kill()
        return HarnessFailure(kind, message, self.stderr_tail(wait=0.2))

    def _kill(self) -> None:
        """Kill the child's whole process group and reap the child (bounded)."""
        p, self.proc = self.proc, None
        if p is None:
            return
        _LIVE.discard(self)
        with contextlib.suppress(OSError):
            os.killpg(p.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            p.kill()
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            p.wait(timeout=5)
        for f in (p.stdin, p.stdout):
            with contextlib.suppress(OSError):
                if f is not None:
                    f.close()

    def _exited(self, p: subprocess.Popen[bytes], before: str) -> HarnessFailure:
        return self._fail("crash", f"the process exited (code {p.returncode}) before {before}")

    def _write(self, p: subprocess.Popen[bytes], data: bytes, deadline: float | None, what: str) -> None:
        assert p.stdin is not None
        fd = p.stdin.fileno()
        view = memoryview(data)
        while view:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise self._fail("timeout", f"the process did not read {what} within {self.step_timeout:g} s")
            _, ready, _ = select.select([], [fd], [], min(POLL, left) if left is not None else POLL)
            if not ready:
                if p.poll() is not None:
                    raise self._exited(p, f"reading {what}")
                continue
            try:
                n = os.write(fd, view)
            except BlockingIOError:
                continue
            except OSError:
                p.poll()
                raise self._exited(p, f"reading {what}") from None
            view = view[n:]

    def _ask(self, msg: dict[str, Any], timeout: float | None) -> Any:
        p = self.proc
        assert p is not None and p.stdout is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        self._write(p, json.dumps(msg, separators=(",", ":")).encode() + b"\n", deadline, msg["type"])
        fd = p.stdout.fileno()
        while b"\n" not in self.buf:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise self._fail("timeout", f"no answer to {msg['type']} within {timeout:g} s")
            ready, _, _ = select.select([fd], [], [], min(POLL, left) if left is not None else POLL)
            if not ready:
                if p.poll() is not None:  # it exited; a grandchild may still hold the pipe
                    raise self._exited(p, f"answering {msg['type']}")
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                try:
                    p.wait(timeout=EOF_WAIT)
                except subprocess.TimeoutExpired:
                    raise self._fail(
                        "crash", f"the process closed its output and kept running (answering {msg['type']})"
                    ) from None
                raise self._exited(p, f"answering {msg['type']}")
            self.buf += chunk
            if len(self.buf) > MAX_LINE and b"\n" not in self.buf:
                raise self._fail("malformed", f"a response line longer than {MAX_LINE} bytes")
        line, self.buf = self.buf.split(b"\n", 1)
        if line.count(b"{") + line.count(b"[") > MAX_CONTAINERS:
            raise self._fail("malformed", f"a response of more than {MAX_CONTAINERS:,} JSON objects and arrays")
        try:
            return json.loads(line)
        except (ValueError, RecursionError):
            raise self._fail("malformed", f"not a JSON line: {line[:200]!r}") from None

    # -- the adapter interface
    def reset(self, config: dict[str, Any]) -> None:
        if self.stuck:
            raise HarnessFailure("timeout", "the process did not answer in time earlier in this run")
        if self.proc is None or self.proc.poll() is not None:
            if self.starts == 0:
                self.start()
            else:  # a restart after a failure: one that fails is the implementation's crash
                try:
                    self.start()
                except HarnessError as e:
                    raise HarnessFailure("crash", str(e), self.stderr_tail()) from None
        out = self._ask({"type": "reset", "config": config}, self.step_timeout)
        if out != {"ok": True} or out["ok"] is not True:
            said = printable(json.dumps(out), 200)
            raise self._fail("malformed", f'reset answered {said} (expected {{"ok":true}})')

    def step(self, op: str, args: Any) -> dict[str, Any]:
        if self.stuck:
            raise HarnessFailure("timeout", "the process did not answer in time earlier in this run")
        if self.proc is None:
            raise HarnessFailure("crash", "the process is not running")
        out = self._ask({"type": "step", "op": op, "args": args}, self.step_timeout)
        why = check_response(out)
        if why is not None:
            raise self._fail("malformed", f"{why}: {printable(json.dumps(out), 200)}")
        out.setdefault("events", [])
        result: dict[str, Any] = out
        return result

    def abort(self) -> None:
        """Kill the child and its process group now (an interrupt: nothing more is asked)."""
        self.stuck = True
        self._kill()

    def close(self) -> None:
        """Say bye and wait for the child to exit (its group killed if it does not within 5 s)."""
        p = self.proc
        if p is not None and p.poll() is None and p.stdin is not None:
            with contextlib.suppress(OSError, HarnessFailure):
                self._write(p, b'{"type":"bye"}\n', time.monotonic() + 1.0, "bye")
            with contextlib.suppress(OSError):
                p.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=5)
        self._kill()


# ----------------------------------------------------------------------------- the Python side


def serve(adapter: Any, stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None) -> int:
    """Answer harness requests with ``adapter`` (``reset(config)``, ``step(op, args)``) until bye or
    end of input. An exception in the adapter ends the process (kvmodel reports a crash with the
    traceback from standard error)."""
    from kvmodel.api import json_safe

    inp = stdin if stdin is not None else sys.stdin.buffer
    out = stdout if stdout is not None else sys.stdout.buffer

    def say(msg: Any) -> None:
        out.write(json.dumps(json_safe(msg), separators=(",", ":")).encode() + b"\n")
        out.flush()

    for raw in inp:
        msg = json.loads(raw)
        kind = msg.get("type")
        if kind == "hello":
            say({"type": "hello", "protocol": PROTOCOL, "name": str(getattr(adapter, "name", type(adapter).__name__))})
        elif kind == "reset":
            adapter.reset(msg["config"])
            say({"ok": True})
        elif kind == "step":
            say(adapter.step(msg["op"], msg.get("args")))
        elif kind == "bye":
            return 0
        else:
            raise ValueError(f"unknown harness request type {kind!r}")
    return 0


def _load(spec: str) -> Any:
    """``FILE.py:NAME`` or ``module:NAME``: the named object."""
    where, _, name = spec.rpartition(":")
    if not where or not name:
        raise SystemExit(f"kvmodel.harness: --adapter must be FILE.py:NAME or module:NAME, got {spec!r}")
    if where.endswith(".py"):
        s = importlib.util.spec_from_file_location(Path(where).stem, where)
        if s is None or s.loader is None:
            raise SystemExit(f"kvmodel.harness: cannot load {where!r}")
        mod = importlib.util.module_from_spec(s)
        sys.modules[s.name] = mod
        s.loader.exec_module(mod)
    else:
        mod = importlib.import_module(where)
    return getattr(mod, name)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kvmodel.harness", description="serve an adapter over the harness")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--adapter", metavar="FILE.py:NAME", help="an adapter class or factory to serve")
    g.add_argument("--component", help="serve kvmodel's own model of this component")
    p.add_argument("--kwargs", default="{}", help="JSON object of keyword arguments for --adapter")
    p.add_argument("--quirks", default="", help="with --component: comma-separated quirks, or 'faithful'")
    a = p.parse_args(argv)
    if a.component:
        from kvmodel.api import ModelAdapter
        from kvmodel.model.quirks import faithful

        qs = sorted(faithful(a.component)) if a.quirks == "faithful" else [q for q in a.quirks.split(",") if q]
        adapter: Any = ModelAdapter(a.component, qs)
    else:
        adapter = _load(a.adapter)(**json.loads(a.kwargs))
    return serve(adapter)


if __name__ == "__main__":
    raise SystemExit(main())
