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

import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs

from kvmodel.swarm.tasks import CONFORM, Task, error_result, run_task


class SwarmError(Exception):
    """A campaign that cannot start: no Dask, no workers, a real part missing on a worker."""


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
    import dask

    with dask.config.set({"distributed.worker.profile.enabled": False}):
        cluster = d.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",  # the scheduler's HTTP endpoints on a free port: never a clash
            silence_logs=logging.ERROR,
        )
    return cluster, d.Client(cluster, set_as_default=False)


def connect(address: str, timeout: float = 60.0, connect_timeout: float = 10.0) -> Any:
    """A client on an existing cluster (``connect_timeout`` s to reach the scheduler); waits up to
    ``timeout`` s for at least one worker."""
    d = _distributed()
    try:
        client = d.Client(address, timeout=connect_timeout, set_as_default=False)
    except (OSError, TimeoutError) as e:
        raise SwarmError(f"--scheduler {address}: cannot connect ({type(e).__name__}: {e})") from None
    try:
        client.wait_for_workers(1, timeout=timeout)
    except TimeoutError:
        client.close()
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
        fut = client.submit(fn, task.to_json(), key=key, pure=False, retries=0)
        if pending is None:
            first.append(fut)
        else:
            pending.add(fut)
        inflight += 1
        return True

    while inflight < window and submit_next():
        pass
    pending = d.as_completed(first, loop=client.loop)
    while inflight:
        fut = next(pending)
        inflight -= 1
        tid = keys[fut.key]
        try:
            res = fut.result()
        except Exception as ex:  # e.g. KilledWorker: the task's workers kept dying
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
