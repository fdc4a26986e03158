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
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

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


def name(e: BaseException) -> str:
    return signal.Signals(e.signum).name if isinstance(e, Terminated) else "SIGINT"


def _again(signum: int, frame: FrameType | None) -> None:
    """A second signal while the first one's clean-up runs: end now."""
    from kvmodel import harness

    with contextlib.suppress(Exception):
        harness.kill_all()
    os._exit(128 + signum)


def _first(signum: int, frame: FrameType | None) -> None:
    for s in HANDLED:
        signal.signal(s, _again)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """The command's signal handling, restored on the way out."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.getsignal(s) for s in HANDLED}
    for s in HANDLED:
        if before[s] is not signal.SIG_IGN:  # nohup's ignored SIGHUP stays ignored
            signal.signal(s, _first)
    try:
        yield
    finally:
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
