"""The tasks of a swarm campaign: what each one is, the distribution they are drawn from, and the
pure function that runs one.

A :class:`Task` is a plain description — (component, case, engine, configuration, seed) for a
model check, (component, target, seed, workloads) for conformance against a real binary — and
:func:`run_task` is a pure function of it: the same description gives the same result (apart
from timings) on any worker, in any order, however many times it is run. That is what lets the
scheduler rerun a task whose worker died, and what makes a campaign's report independent of
the number of workers.

The task list (:func:`plan`) is drawn from the campaign seed:

1. **anchors** — one task per cell of the check matrix (:func:`kvmodel.suite.plan`: every
   (engine, component, case) the chosen components, engines and mode give, and one conformance
   cell per target), in an order shuffled by the seed, each at ``kvmodel check``'s own
   configuration (the ``ci`` Hypothesis budget at the campaign seed, the component's check
   world, its BMC depth, the target's check workload count): a campaign at least as long as the
   matrix covers what ``kvmodel check --seed S`` covers;
2. **diversified** tasks — a cell drawn uniformly among those that still have an untried
   configuration, with a configuration drawn from the :class:`Distribution` and its own seed.
   The explorer and Z3 are deterministic, so each of their configurations is drawn at most
   once per cell; Hypothesis and conformance draw a fresh seed every time.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from kvmodel import components
from kvmodel.engines import Budget, Case
from kvmodel.profiles import PROFILES, QUIRK_MIN_EXAMPLES

FORMAT = "kvmodel-swarm/1"
MODEL_ENGINES = ("hypothesis", "explore", "z3")
CONFORM = "conform"
# the engines a campaign runs when none are named (Z3's proofs do not diversify by seed, and a
# G1 BMC task costs 40-140 s: ask for it with --engines z3)
DEFAULT_ENGINES = ("hypothesis", "explore", CONFORM)


@attrs.frozen
class Distribution:
    """Where diversified tasks draw their configuration from (``docs/swarm.md`` lists it).

    * Hypothesis: ``examples`` (an ideal or faithful case; a quirk case runs at least
      ``kvmodel.profiles.QUIRK_MIN_EXAMPLES``, as in ``kvmodel check``) and ``steps`` per
      example, each uniform over its tuple; the world is the machine's own with probability
      ``own_world``, else the configuration of one of the component's bounded worlds (its check
      world and the worlds pinned in ``specs/manifest.json``), uniform.
    * Explorer: one of the component's bounded worlds whose quirk set is the case's (the check
      world, and the manifest's worlds with the same quirks) whose manifest cost is at most
      ``explore_max_seconds``; each search stops at ``explore_max_states`` states (inconclusive).
    * Z3: the BMC depth, ``depth_spread`` below the check depth up to it (the ideal case is one
      proof: its anchor only).
    * Conformance: ``workloads`` generated workloads of up to ``max_ops`` operations, uniform.
    * ``max_examples`` caps every Hypothesis task, quirk minimum included (``--max-examples``:
      for quick campaigns); ``None``: no cap.
    """

    examples: tuple[int, ...] = (50, 100, 150, 300)
    steps: tuple[int, ...] = (10, 20, 30, 50)
    own_world: float = 0.5
    explore_max_seconds: float = 20.0
    explore_max_states: int = 500_000
    depth_spread: int = 2
    workloads: tuple[int, ...] = (25, 50, 100)
    max_ops: tuple[int, ...] = (12, 24, 32)
    max_examples: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in attrs.asdict(self).items()}


@attrs.frozen
class Task:
    """One task: ``engine`` on ``component``'s ``case`` (a model check) or on ``target`` (a
    conformance run), with ``config`` (what the engine needs: see :class:`Distribution`) and
    ``seed``. ``anchor``: the cell's ``kvmodel check`` configuration."""

    id: int
    engine: str
    component: str
    cell: str
    case: Mapping[str, Any]
    config: Mapping[str, Any]
    seed: int
    anchor: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "engine": self.engine,
            "component": self.component,
            "cell": self.cell,
            "case": dict(self.case),
            "config": dict(self.config),
            "seed": self.seed,
            "anchor": self.anchor,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Task:
        return cls(
            int(d["id"]),
            str(d["engine"]),
            str(d["component"]),
            str(d["cell"]),
            dict(d["case"]),
            dict(d["config"]),
            int(d["seed"]),
            bool(d.get("anchor", False)),
        )

    def describe(self) -> str:
        cfg = ", ".join(f"{k}={json.dumps(v, sort_keys=True)}" for k, v in sorted(self.config.items()))
        return f"task {self.id}: {self.cell} [{cfg}] seed {self.seed}"


def case_json(case: Case) -> dict[str, Any]:
    return {
        "kind": case.kind,
        "quirks": sorted(case.quirks),
        "quirk": case.quirk,
        "breaks": list(case.breaks),
        "revision": case.revision,
    }


def case_of(component: str, d: Mapping[str, Any]) -> Case:
    return Case(
        component,
        str(d["kind"]),
        frozenset(d.get("quirks") or ()),
        d.get("quirk"),
        tuple(d.get("breaks") or ()),
        d.get("revision"),
    )


@attrs.frozen
class Cell:
    """A cell of the campaign's matrix: one (engine, component, case)."""

    engine: str
    component: str
    case: Case

    @property
    def name(self) -> str:
        what = self.case.quirk if self.case.kind == "conform" else self.case.label
        return f"{self.engine} {self.component} {what}"


def cells(
    names: Iterable[str],
    engines: Iterable[str],
    *,
    mode: str = "both",
    revision: str | None = None,
    targets: Iterable[str] | None = None,
) -> list[Cell]:
    """The matrix of the campaign: :func:`kvmodel.suite.plan` for the model engines, and one
    cell per conformance target (``targets``: by name; ``None``: those ``kvmodel check`` runs)."""
    from kvmodel import suite

    names, engines = list(names), list(engines)
    model = [e for e in engines if e != CONFORM]
    out = [Cell(e.name, c.name, case) for e, c, case in suite.plan(names, model, mode, revision)] if model else []
    if CONFORM in engines:
        wanted = None if targets is None else set(targets)
        for n in names:
            c = components.get(n)
            for t in c.conform:
                if (t.in_check and wanted is None) or (wanted is not None and t.name in wanted):
                    out.append(Cell(CONFORM, c.name, Case(c.name, "conform", quirk=t.name)))
    return out


_MANIFEST: dict[str, float] | None = None


def manifest_seconds() -> dict[str, float]:
    """The cost of each pinned explorer world, as ``specs/manifest.json`` records it."""
    global _MANIFEST
    if _MANIFEST is None:
        from kvmodel import specs

        path = Path(specs.__file__).parent / "manifest.json"
        doc = json.loads(path.read_text()) if path.is_file() else {"entries": []}
        _MANIFEST = {e["name"]: float(e.get("seconds", 0.0)) for e in doc["entries"] if e.get("engine") == "explore"}
    return _MANIFEST


def _world_json(name: str, w: Any) -> dict[str, Any]:
    return {"world": name, "config": dict(w.config), "space": dict(w.space)}


def explore_worlds(component: str, case: Case, dist: Distribution) -> list[dict[str, Any]]:
    """The explorer worlds a cell may run: its check world first, then the pinned worlds with the
    case's quirks within the cost bound."""
    c = components.get(component)
    out = [_world_json("check", c.profile.explore)]
    cost = manifest_seconds()
    for name, w, qs in c.manifest_worlds:
        if sorted(qs) == sorted(case.quirks) and name in cost and cost[name] <= dist.explore_max_seconds:
            j = _world_json(name, w)
            if all((j["config"], j["space"]) != (o["config"], o["space"]) for o in out):
                out.append(j)
    return out


def machine_worlds(component: str) -> list[dict[str, Any]]:
    """The configurations a Hypothesis task may run the machine in besides its own."""
    c = components.get(component)
    seen: list[dict[str, Any]] = []
    for w in [c.profile.explore, *(w for _, w, _ in c.manifest_worlds)]:
        cfg = dict(w.config)
        if cfg not in seen:
            seen.append(cfg)
    return seen


def _anchor_config(cell: Cell, dist: Distribution) -> dict[str, Any]:
    ci = PROFILES["ci"]
    if cell.engine == "hypothesis":
        ex = ci.max_examples if cell.case.kind != "quirk" else max(ci.max_examples, QUIRK_MIN_EXAMPLES)
        if dist.max_examples is not None:
            ex = min(ex, dist.max_examples)
        return {"max_examples": ex, "steps": ci.steps, "world": None}
    if cell.engine == "explore":
        return {**explore_worlds(cell.component, cell.case, dist)[0], "max_states": dist.explore_max_states}
    if cell.engine == "z3":
        return {"depth": components.get(cell.component).profile.bmc_depth}
    t = next(t for t in components.get(cell.component).conform if t.name == cell.case.quirk)
    return {"target": t.name, "workloads": t.check_workloads, "max_ops": 24}


def _options(cell: Cell, dist: Distribution) -> list[dict[str, Any]] | None:
    """A deterministic engine's configurations (``None``: unbounded, a fresh seed each time)."""
    if cell.engine == "explore":
        return [{**w, "max_states": dist.explore_max_states} for w in explore_worlds(cell.component, cell.case, dist)]
    if cell.engine == "z3":
        if cell.case.kind == "ideal":
            return [_anchor_config(cell, dist)]
        d = components.get(cell.component).profile.bmc_depth
        return [{"depth": k} for k in range(d, max(1, d - dist.depth_spread) - 1, -1)]
    return None


def _draw(cell: Cell, rng: random.Random, dist: Distribution) -> dict[str, Any]:
    if cell.engine == "hypothesis":
        ex = rng.choice(dist.examples)
        if cell.case.kind == "quirk":
            ex = max(ex, QUIRK_MIN_EXAMPLES)
        if dist.max_examples is not None:
            ex = min(ex, dist.max_examples)
        worlds = machine_worlds(cell.component)
        world = None if rng.random() < dist.own_world else rng.choice(worlds)
        return {"max_examples": ex, "steps": rng.choice(dist.steps), "world": world}
    t = next(t for t in components.get(cell.component).conform if t.name == cell.case.quirk)
    return {"target": t.name, "workloads": rng.choice(dist.workloads), "max_ops": rng.choice(dist.max_ops)}


def stream(matrix: list[Cell], seed: int, dist: Distribution | None = None, *, shuffle: bool = True) -> Iterator[Task]:
    """The campaign's tasks, in order: the anchors, then diversified tasks until every cell is
    exhausted (never, when a Hypothesis or conformance cell is in the matrix)."""
    dist = dist or Distribution()
    rng = random.Random(f"kvmodel-swarm:{seed}")
    order = list(matrix)
    if shuffle:
        rng.shuffle(order)
    # per cell (by position): its deterministic configurations not yet used (None: unbounded)
    left: list[list[dict[str, Any]] | None] = []
    n = 0
    for cell in order:
        cfg = _anchor_config(cell, dist)
        opts = _options(cell, dist)
        left.append(None if opts is None else [o for o in opts if o != cfg])
        yield Task(n, cell.engine, cell.component, cell.name, case_json(cell.case), cfg, seed, anchor=True)
        n += 1
    while True:
        open_cells = [i for i, rest in enumerate(left) if rest is None or rest]
        if not open_cells:
            return
        i = rng.choice(open_cells)
        cell, rest = order[i], left[i]
        if rest is None:
            cfg = _draw(cell, rng, dist)
        else:
            cfg = rest.pop(rng.randrange(len(rest)))
        yield Task(n, cell.engine, cell.component, cell.name, case_json(cell.case), cfg, rng.randrange(2**32))
        n += 1


def plan(matrix: list[Cell], seed: int, count: int, dist: Distribution | None = None) -> list[Task]:
    """The first ``count`` tasks of the campaign (fewer when the matrix has fewer distinct ones)."""
    out: list[Task] = []
    for t in stream(matrix, seed, dist):
        if len(out) >= count:
            break
        out.append(t)
    return out


# -- running one task (on a worker) -------------------------------------------------------------


def _violation(v: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not v:
        return None
    return {"invariant": v.get("invariant"), "step": v.get("step"), "message": v.get("message")}


def _run_hypothesis(task: Task, case: Case) -> dict[str, Any]:
    from kvmodel import machines
    from kvmodel.engines.hypothesis import outcome

    quirk = case.kind == "quirk"
    r = machines.run(
        task.component,
        config=task.config.get("world"),
        quirks=case.quirks,
        mode=f"quirk:{case.quirk}" if quirk else case.kind,
        seed=task.seed,
        max_examples=int(task.config["max_examples"]),
        steps=int(task.config["steps"]),
        target=case.breaks if quirk else None,
    )
    out = outcome(r, expect_violation=quirk)
    found = [r.violation["invariant"]] if r.violation else []
    return {
        "outcome": out,
        "steps": r.steps,
        "examples": r.examples,
        "violation": _violation(r.violation),
        "found": found,
        "error": r.error,
        "trace_doc": r.trace if r.violation else None,
    }


def _run_explore(task: Task, case: Case) -> dict[str, Any]:
    from kvmodel import explorer
    from kvmodel.engines.explore import outcome, shallowest

    c = components.get(task.component)
    assert c.space is not None
    r = explorer.explore(
        dict(task.config["config"]),
        case.quirks,
        c.space(**dict(task.config["space"])),
        max_states=int(task.config["max_states"]),
    )
    out = outcome(r, case)
    found = shallowest(r, case)
    doc, viol = found if found is not None else (None, None)
    return {
        "outcome": out,
        "steps": r.transitions,
        "states": r.states,
        "complete": r.complete,
        "violation": viol,
        "found": sorted(r.violations),
        "error": None,
        "trace_doc": doc,
    }


def _run_z3(task: Task, case: Case) -> dict[str, Any]:
    from kvmodel.engines.z3 import Z3Engine

    c = components.get(task.component)
    c = attrs.evolve(c, profile=attrs.evolve(c.profile, bmc_depth=int(task.config["depth"])))
    with tempfile.TemporaryDirectory(prefix="kvmodel-swarm-") as tmp:
        r = Z3Engine().run(c, case, Budget(seed=task.seed, out_dir=Path(tmp)))
        doc = json.loads(Path(r.trace).read_text()) if r.trace and Path(r.trace).is_file() else None
    found = sorted(x["invariant"] for x in r.extra.get("invariants", []) if x["status"] == "violated")
    return {
        "outcome": r.outcome,
        "steps": r.steps,
        "violation": _violation(r.violation),
        "found": found,
        "error": r.error,
        "trace_doc": doc,
    }


def _run_conform(task: Task, case: Case) -> dict[str, Any]:
    c = components.get(task.component)
    t = next(t for t in c.conform if t.name == task.config["target"])
    why = t.available()
    if why is not None:
        return {"outcome": "error", "steps": 0, "violation": None, "found": [], "error": why, "trace_doc": None}
    j = t.run(workloads=int(task.config["workloads"]), seed=task.seed, max_ops=int(task.config["max_ops"]))
    steps = int(j.get("events", j.get("steps", 0)))
    if not j["divergences"]:
        return {"outcome": "pass", "steps": steps, "violation": None, "found": [], "error": None, "trace_doc": None}
    from kvmodel.engines.conform import divergence

    doc = {"target": t.name, t.counterexample_key: j.get("counterexample")}
    if j.get("config"):
        doc["config"] = j["config"]
    return {
        "outcome": "violation",
        "steps": steps,
        "divergences": j["divergences"] if isinstance(j["divergences"], int) else len(j["divergences"]),
        "violation": divergence(j),
        "found": [t.name],
        "error": None,
        "trace_doc": doc if j.get("counterexample") else None,
    }


RUNNERS = {"hypothesis": _run_hypothesis, "explore": _run_explore, "z3": _run_z3, CONFORM: _run_conform}


def error_result(ex: BaseException) -> dict[str, Any]:
    """The result of a task that crashed (in its engine, or on the cluster: ``KilledWorker``)."""
    return {
        "outcome": "error",
        "steps": 0,
        "violation": None,
        "found": [],
        "error": f"{type(ex).__name__}: {ex}"[:400],
        "trace_doc": None,
    }


def run_task(desc: Mapping[str, Any]) -> dict[str, Any]:
    """Run one task (a pure function of its description, apart from ``timing``). Whatever the
    engine raises becomes an ``error`` result naming the task — never a pass, never dropped."""
    on_worker = _worker_name() is not None
    if on_worker:
        # the worker's event-loop threads take the GIL every 5 ms by default; a CPU-bound task
        # loses about 10 % to the switching (docs/performance.md, *Swarm*): 50 ms is ample for
        # heartbeats that come every second
        sys.setswitchinterval(max(sys.getswitchinterval(), 0.05))
    t0 = time.perf_counter()
    out: dict[str, Any]
    try:
        task = Task.from_json(desc)
        case = case_of(task.component, task.case)
        runner = RUNNERS.get(task.engine)
        if runner is None:
            raise ValueError(f"unknown engine {task.engine!r}")
        with warnings.catch_warnings():
            # a worker's own threads (heartbeats, retries) touch the global `random` module while
            # Hypothesis draws; Hypothesis warns about it. No engine here draws from it.
            warnings.filterwarnings("ignore", message="Do not use the `random` module")
            out = runner(task, case)
    except Exception as ex:  # a crash decides nothing: reported with the task's description
        out = error_result(ex)
    out["id"] = desc.get("id")
    out["timing"] = {"seconds": round(time.perf_counter() - t0, 3), "worker": _worker_name() if on_worker else None}
    return out


def _worker_name() -> str | None:
    try:
        from distributed import get_worker

        w = get_worker()
    except (ImportError, ValueError):
        return None
    return str(w.address)
