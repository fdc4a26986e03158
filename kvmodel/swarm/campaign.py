"""Running a campaign's tasks on Dask distributed.

:func:`local_cluster` starts a ``LocalCluster`` of worker processes (one thread each: the engines
are CPU-bound Python); :func:`connect` joins an existing cluster by its scheduler address.
:func:`run` submits the tasks through a sliding window (a few per worker, so a ``--budget``
campaign can stop submitting at its deadline), gathers each result as it completes, and keeps
what the report needs. Nothing here changes a result: every task is a pure function of its
description (:func:`kvmodel.swarm.tasks.run_task`).

Fault tolerance is Dask's: when a worker dies, the scheduler reschedules the tasks it was
running (and recomputes results it held that are still wanted) on the other workers, up to
``distributed.scheduler.allowed-failures`` deaths per task; a task past that limit comes back as
a ``KilledWorker`` error and is reported as an error row with its description. Which tasks were
rerun is read from the scheduler's own ``remove-worker`` events.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import CancelledError
from typing import Any

import attrs

from kvmodel.swarm.tasks import CONFORM, Task, error_result, run_task


class SwarmError(Exception):
    """A campaign that cannot start (no Dask, no workers, a real part missing on a worker, a peer
    that is not a scheduler) or cannot go on (its scheduler went away): ``log`` holds what ran
    before, for the report."""

    def __init__(self, message: str, log: RunLog | None = None) -> None:
        super().__init__(message)
        self.log = log


LOST_AFTER = 15.0  # seconds a campaign waits for a scheduler it lost before it gives up


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise SwarmError(
            'Dask distributed is not installed: pip install -e ".[swarm]" (it is part of the dev extra)'
        ) from None
    return distributed


def local_cluster(workers: int) -> tuple[Any, Any]:
    """A ``LocalCluster`` of ``workers`` processes, one thread each, and a client on it.

    The workers' statistical profiler is off: it samples the task thread's stack every 10 ms,
    which cost the engines' deep Python stacks about 12 % (``docs/performance.md``, *Swarm*)."""
    d = _distributed()
    import sys

    import dask

    # multiprocessing's resource tracker (started with this interpreter's -W options) removes the
    # workers' semaphores when an interrupt killed them (kvmodel.signals.kill_descendants): it
    # does so in silence, so that an interrupted command says one line
    quiet = "ignore:resource_tracker:UserWarning"
    if quiet not in sys.warnoptions:
        sys.warnoptions.append(quiet)
    with dask.config.set({"distributed.worker.profile.enabled": False}):
        cluster = d.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",  # the scheduler's HTTP endpoints on a free port: never a clash
            silence_logs=logging.ERROR,
        )
    return cluster, d.Client(cluster, set_as_default=False)


HANDSHAKE_LIMIT = 1 << 26  # bytes: a Dask comm's first message is a small handshake


def probe(address: str, timeout: float = 10.0) -> None:
    """Check, within ``timeout`` seconds, that ``address`` is a Dask scheduler before Dask's client
    speaks to it: it accepts a TCP connection and sends the first 8 bytes of a comm handshake (a
    scheduler sends its handshake as soon as a connection opens), whose length field is that of a
    small message. A silent peer, a peer that closes, and one that answers anything else are each a
    :class:`SwarmError` (Dask's own client would wait forever on the first, and try to allocate
    whatever length a garbage peer's first bytes spell)."""
    import socket
    import struct
    import time

    host, port = _host_port(address)
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            head = b""
            while len(head) < 8:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SwarmError(f"--scheduler {address}: no Dask handshake within {timeout:g} s (a silent peer)")
                sock.settimeout(left)
                try:
                    chunk = sock.recv(8 - len(head))
                except TimeoutError:
                    continue
                if not chunk:
                    raise SwarmError(f"--scheduler {address}: the peer closed the connection (not a Dask scheduler)")
                head += chunk
    except OSError as e:
        raise SwarmError(f"--scheduler {address}: cannot connect ({e.strerror or e})") from None
    (length,) = struct.unpack("<Q", head)
    if not 0 < length <= HANDSHAKE_LIMIT:
        raise SwarmError(f"--scheduler {address}: the peer's first bytes are not a Dask handshake (not a scheduler)")


def _host_port(address: str) -> tuple[str, int]:
    rest = address.split("://", 1)[1] if "://" in address else address
    if "://" in address and not address.startswith("tcp://"):
        raise SwarmError(f"--scheduler {address}: only tcp:// addresses are supported")
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise SwarmError(f"--scheduler {address}: not HOST:PORT or tcp://HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)


def connect(address: str, timeout: float = 60.0, connect_timeout: float = 10.0) -> Any:
    """A client on an existing cluster (:func:`probe` first; ``connect_timeout`` s to reach the
    scheduler, the client made on a thread of its own so that no handshake can hold kvmodel past
    it); waits up to ``timeout`` s for at least one worker."""
    import threading

    d = _distributed()
    probe(address, connect_timeout)
    box: list[Any] = []

    def make() -> None:
        try:
            box.append(d.Client(address, timeout=connect_timeout, set_as_default=False))
        except BaseException as e:  # handed over: MemoryError, a protocol error, a timeout
            box.append(e)

    t = threading.Thread(target=make, name="kvmodel-swarm-connect", daemon=True)
    t.start()
    t.join(connect_timeout + 5)
    if not box:
        raise SwarmError(
            f"--scheduler {address}: the scheduler did not complete a connection within {connect_timeout:g} s"
        )
    if isinstance(box[0], BaseException):
        e = box[0]
        raise SwarmError(f"--scheduler {address}: cannot connect ({type(e).__name__}: {str(e)[:200]})") from None
    client = box[0]
    # the client's own reconnection log (an ERROR line per attempt) would add lines to kvmodel's one
    logging.getLogger("distributed.client").setLevel(logging.CRITICAL)
    try:
        client.wait_for_workers(1, timeout=timeout)
    except Exception:
        with contextlib.suppress(Exception):
            client.close(timeout=5)
        raise SwarmError(f"--scheduler {address}: no worker joined within {timeout:.0f} s") from None
    return client


def _probe(targets: list[tuple[str, str]]) -> dict[str, str | None]:
    """On a worker: why each conformance target's real part is missing (``None``: present)."""
    from kvmodel import components

    out: dict[str, str | None] = {}
    for comp, name in targets:
        t = next(t for t in components.get(comp).conform if t.name == name)
        out[name] = t.available()
    return out


def check_real_parts(client: Any, tasks: Iterable[Task]) -> None:
    """Every worker must have the real part of every conformance target the campaign runs."""
    wanted = sorted({(t.component, str(t.config["target"])) for t in tasks if t.engine == CONFORM})
    if not wanted:
        return
    per_worker = client.run(_probe, wanted)
    bad = [
        f"worker {w}: target {name}: {why}"
        for w, found in sorted(per_worker.items())
        for name, why in sorted(found.items())
        if why is not None
    ]
    if bad:
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise SwarmError(f"a real part is missing: {bad[0]}{more}")


@attrs.define
class RunLog:
    """What the run gathered: each task's result (by id), and how the cluster behaved."""

    results: dict[int, dict[str, Any]] = attrs.field(factory=dict)
    tasks: dict[int, Task] = attrs.field(factory=dict)
    seconds: float = 0.0
    workers: int = 0
    scheduler: str = ""
    reruns: list[int] = attrs.field(factory=list)
    workers_lost: int = 0
    stopped_by_budget: bool = False


def _lost_keys(client: Any) -> tuple[set[str], int]:
    """Keys the scheduler rescheduled because a worker died, and the number of such deaths."""
    try:
        events = client.get_events("all")
    except Exception:  # an old scheduler without the topic: nothing known
        return set(), 0
    keys: set[str] = set()
    deaths = 0
    for _, msg in events:
        if not isinstance(msg, dict) or msg.get("action") != "remove-worker" or msg.get("expected"):
            continue
        deaths += 1
        for k in (*msg.get("processing-tasks", ()), *msg.get("lost-computed-tasks", ())):
            keys.add(str(k))
    return keys, deaths


def run(
    tasks: Iterator[Task],
    client: Any,
    *,
    budget_seconds: float | None = None,
    window: int | None = None,
    on_result: Callable[[Task, dict[str, Any], RunLog], None] | None = None,
    fn: Callable[[dict[str, Any]], dict[str, Any]] = run_task,
) -> RunLog:
    """Run ``tasks`` on the client's cluster (all of them, or those submitted before
    ``budget_seconds`` ran out: the ones already running are waited for, never dropped).
    ``fn`` runs one task on a worker (:func:`~kvmodel.swarm.tasks.run_task`; the benchmark
    measures the scheduling overhead with a no-op)."""
    d = _distributed()
    info = client.scheduler_info()
    nworkers = max(1, len(info.get("workers", {})))
    log = RunLog(workers=nworkers, scheduler=str(info.get("address", "")))
    nonce = os.urandom(4).hex()
    lost0, deaths0 = _lost_keys(client)
    window = window or max(4, 3 * nworkers)
    t0 = time.perf_counter()
    deadline = None if budget_seconds is None else t0 + budget_seconds
    keys: dict[str, int] = {}
    first: list[Any] = []
    pending: Any = None
    inflight = 0

    def gone() -> SwarmError:
        log.seconds = time.perf_counter() - t0
        return SwarmError(
            f"the scheduler {log.scheduler or ''} went away mid-campaign ({len(log.results)} of "
            f"{len(log.tasks)} submitted tasks finished)",
            log,
        )

    def submit_next() -> bool:
        nonlocal inflight
        if deadline is not None and time.perf_counter() >= deadline:
            log.stopped_by_budget = True
            return False
        task = next(tasks, None)
        if task is None:
            return False
        key = f"kvmodel-swarm-{nonce}-{task.id}"
        keys[key] = task.id
        log.tasks[task.id] = task
        try:
            fut = client.submit(fn, task.to_json(), key=key, pure=False, retries=0)
        except Exception:  # a closed client: the scheduler went away
            raise gone() from None
        if pending is None:
            first.append(fut)
        else:
            pending.add(fut)
        inflight += 1
        return True

    while inflight < window and submit_next():
        pass
    pending = d.as_completed(first, loop=client.loop)
    lost_since: float | None = None
    while inflight:
        if not pending.has_ready():
            # the client reconnects for a while and then gives up; as_completed would wait forever
            if client.status == "running":
                lost_since = None
            elif lost_since is None:
                lost_since = time.monotonic()
            elif client.status in ("closed", "closing", "failed") or time.monotonic() - lost_since > LOST_AFTER:
                raise gone()
            time.sleep(0.05)
            continue
        fut = next(pending)
        inflight -= 1
        tid = keys[fut.key]
        try:
            res = fut.result()
        except BaseException as ex:  # e.g. KilledWorker: the task's workers kept dying
            if isinstance(ex, KeyboardInterrupt) or client.status != "running":
                if isinstance(ex, KeyboardInterrupt | SystemExit) or not isinstance(ex, Exception | CancelledError):
                    raise
                raise gone() from None
            res = {**error_result(ex), "id": tid, "timing": {"seconds": 0.0, "worker": None}}
        fut.release()
        log.results[tid] = res
        if on_result is not None:
            on_result(log.tasks[tid], res, log)
        while inflight < window and submit_next():
            pass
    log.seconds = time.perf_counter() - t0
    lost, deaths = _lost_keys(client)
    log.reruns = sorted(keys[k] for k in lost - lost0 if k in keys)
    log.workers_lost = deaths - deaths0
    return log
