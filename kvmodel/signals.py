"""Interrupts and termination: every command ends on SIGINT, SIGTERM or SIGHUP with one line and
the conventional exit code (128 + the signal: 130, 143, 129), within a second or two, with every
process it started gone.

:func:`handled` installs the handlers for a command's run (in the main thread; elsewhere it does
nothing). The first signal raises :class:`KeyboardInterrupt` (SIGINT) or :class:`Terminated` in
the main thread, so ``finally`` blocks run: explorer workers are killed, harness children are
killed with their process groups, the swarm's cluster is closed, temporary output files are
removed. A second signal during that clean-up ends the process at once (harness children killed
first), with the same exit code.

:func:`as_worker` is for a forked helper process: it dies with its parent (Linux's parent-death
signal) and leaves SIGINT to the parent, which stops it.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: the command stops (a ``BaseException``, as ``KeyboardInterrupt``
    is, so that no ``except Exception`` of an engine swallows it)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"terminated by {signal.Signals(signum).name}")


def exit_code(e: BaseException) -> int:
    """128 + the signal's number: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP."""
    return 128 + (e.signum if isinstance(e, Terminated) else int(signal.SIGINT))


def _again(signum: int, frame: FrameType | None) -> None:
    """A second signal while the first one's clean-up runs: end now."""
    from kvmodel import harness

    with contextlib.suppress(Exception):
        harness.kill_all()
    os._exit(128 + signum)


GRACE = 5.0  # seconds the clean-up after a signal may take before the process ends anyway


def _first(signum: int, frame: FrameType | None) -> None:
    for s in HANDLED:
        signal.signal(s, _again)
    t = threading.Timer(GRACE, _overdue, args=(signum,))
    t.daemon = True
    t.start()
    _timers.append(t)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


_timers: list[threading.Timer] = []


def _overdue(signum: int) -> None:
    """The clean-up outlived :data:`GRACE`: end now."""
    if not _said:
        with contextlib.suppress(Exception):
            sys.stderr.write(line(signum) + "\n")
            sys.stderr.flush()
    _again(signum, None)


_said: list[bool] = []


def line(signum: int) -> str:
    return f"kvmodel: interrupted ({signal.Signals(signum).name}): no verdict"


def say(e: BaseException) -> None:
    """The command's one line about the interrupt ``e``, on standard error."""
    _said.append(True)
    print(line(exit_code(e) - 128), file=sys.stderr)


def _unraisable(u: Any) -> None:
    """An interrupt raised where Python cannot pass it on (a garbage-collector callback, a
    ``__del__``): delivered again, to be raised in the command's own flow, without the
    "Exception ignored" report."""
    if isinstance(u.exc_value, KeyboardInterrupt | Terminated):
        signum = u.exc_value.signum if isinstance(u.exc_value, Terminated) else int(signal.SIGINT)
        for s in HANDLED:
            signal.signal(s, _first)
        while _timers:
            _timers.pop().cancel()
        main = threading.main_thread().ident
        if main is not None:  # sent from another thread: handled once this callback has returned
            threading.Timer(0.01, signal.pthread_kill, args=(main, signum)).start()
        return
    _previous_hook(u)


_previous_hook = sys.unraisablehook


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """The command's signal handling, restored on the way out."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    global _previous_hook
    before = {s: signal.getsignal(s) for s in HANDLED}
    for s in HANDLED:
        if before[s] is not signal.SIG_IGN:  # nohup's ignored SIGHUP stays ignored
            signal.signal(s, _first)
    _previous_hook, sys.unraisablehook = sys.unraisablehook, _unraisable
    try:
        yield
    finally:
        while _timers:  # the command ended by itself: no forced end
            _timers.pop().cancel()
        sys.unraisablehook = _previous_hook
        for s, h in before.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)


def kill_descendants() -> None:
    """SIGKILL every process this one started, children and theirs (a swarm's local cluster on an
    interrupt: its orderly close takes seconds)."""
    try:
        import psutil  # type: ignore[import-untyped]
    except ImportError:
        return
    with contextlib.suppress(Exception):
        kids = [k for k in psutil.Process().children(recursive=True) if not _tracker(k)]
        for k in kids:
            with contextlib.suppress(Exception):
                k.kill()
        psutil.wait_procs(kids, timeout=2)


def _tracker(p: object) -> bool:
    """multiprocessing's resource tracker: it ends by itself when this process does (killed, it
    would be started again at exit to forget semaphores it never knew, with tracebacks)."""
    try:
        return any("resource_tracker" in part for part in p.cmdline())  # type: ignore[attr-defined]
    except Exception:
        return False


def as_worker() -> None:
    """In a forked helper: die with the parent (SIGKILL when it goes, however it goes), ignore
    SIGINT (a terminal's Ctrl-C reaches the whole process group; the parent stops the helper), and
    take SIGTERM's default action."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent went before the signal was armed
        os._exit(1)


_interrupted: list[int] = []


def run_command(fn: Callable[[Any], int], argv: Any) -> int:
    """Run a command's ``fn(argv)`` under :func:`handled`, on standard streams that never fail on
    a character their encoding cannot hold (``PYTHONIOENCODING=ascii``: escapes instead); an
    interrupt is one line (:func:`say`) and 128 + the signal."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            with contextlib.suppress(Exception):
                stream.reconfigure(errors="backslashreplace")
    with handled():
        try:
            return fn(argv)
        except (KeyboardInterrupt, Terminated) as e:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            say(e)
            _interrupted.append(exit_code(e))
            return exit_code(e)


def exit_now(code: int) -> None:
    """Exit with ``code``. After an interrupt every clean-up of the command has run; the
    interpreter's own exit handlers (a Dask cluster's orderly shutdown can take seconds) are
    skipped so that the command ends at once."""
    if _interrupted:
        from kvmodel import harness

        harness.kill_all()
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
