"""Differential conformance of the router's radix tree: the model against the real one.

Both trees are adapters of the one conformance contract (:mod:`kvmodel.conformance.differential`):
``reset(config)`` and ``step(op, args)``, made of two calls — ``apply(op)`` (the error id it
raised, or ``None``) and ``observe(probes)`` (the tree content per worker and the
``find_matches`` scores for each probe sequence of the configuration). The model
(:class:`ModelRadixTree`) and the real ``RadixTree`` of ``ai-dynamo-runtime==1.6.1``
(:class:`RealRadixTree`) implement it; :func:`differential` drives two adapters with the
same operations and reports the first divergence; :func:`run` generates adversarial
workloads with Hypothesis (unknown parents, unknown removes, duplicates, conflicting
local hashes, several workers and dp ranks, Cleared, self-parents), shrinks a failing
one and then drops every operation not needed for the divergence.

Operations are JSON objects (a step is the ``op`` and the rest, :func:`actions`):
``{"op": "apply_event", "worker_id": w, "event": <KvCacheEvent JSON>}``,
``{"op": "find_matches", "local_hashes": [...], "early_exit": b}``,
``{"op": "clear_all_blocks", "worker_id": w}``, ``{"op": "remove_worker", "worker_id": w}``.
"""

from __future__ import annotations

import abc
import itertools
import json
import os
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import attrs

from kvmodel.conformance import differential as differential_
from kvmodel.conformance.differential import Action, Difference, Divergence, Report
from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.model.events import Removed, Stored, event_from_json
from kvmodel.model.router import Revision, make_tree

Content = dict[str, list[list[Any]]]


class RadixAdapter(Protocol):
    """A radix tree behind the conformance contract (:class:`kvmodel.conformance.differential.Adapter`)
    and the two calls it is made of: ``apply(op)`` (the error id raised, or ``None``) and
    ``observe(probes)``."""

    name: str

    def reset(self, config: dict[str, Any]) -> None: ...
    def step(self, op: str, args: Any) -> dict[str, Any]: ...
    def apply(self, op: dict[str, Any]) -> str | None: ...
    def observe(self, probes: Sequence[Sequence[int]]) -> dict[str, Any]: ...


class _Stepped(abc.ABC):
    """``reset(config)`` / ``step(op, args)`` over ``apply`` and ``observe``: after each operation,
    the error it raised, the content and the scores of the configuration's probes
    (``{"probe_tokens": [...], "probe_length": n}``: every sequence of those local hashes up to
    ``n`` long)."""

    probes: list[list[int]]

    @abc.abstractmethod
    def _fresh(self) -> None: ...

    @abc.abstractmethod
    def apply(self, op: dict[str, Any]) -> str | None: ...

    @abc.abstractmethod
    def observe(self, probes: Sequence[Sequence[int]]) -> dict[str, Any]: ...

    def reset(self, config: dict[str, Any] | None = None) -> None:
        cfg = config or {}
        self.probes = probes_for(cfg.get("probe_tokens", []), int(cfg.get("probe_length", 0)))
        self._fresh()

    def step(self, op: str, args: Any) -> dict[str, Any]:
        error = self.apply({"op": op, **args})
        obs = self.observe(self.probes)
        return {"error": error, "content": obs["content"], "scores": list(zip(self.probes, obs["scores"], strict=True))}


def _wkey(w: tuple[int, int]) -> str:
    return f"{w[0]}:{w[1]}"


def _other_op(tree: Any, op: dict[str, Any]) -> None:
    """The operations the model and the real tree take with the same arguments."""
    kind = op["op"]
    if kind == "find_matches":
        tree.find_matches(list(op["local_hashes"]), bool(op.get("early_exit", False)))
    elif kind == "clear_all_blocks":
        tree.clear_all_blocks(op["worker_id"])
    elif kind == "remove_worker":
        tree.remove_worker(op["worker_id"])
    else:
        raise InvalidInput(f"unknown radix-tree operation {kind!r}")


class ModelRadixTree(_Stepped):
    """The model (:class:`kvmodel.model.router.RadixTree`) as an adapter."""

    def __init__(self, revision: Revision = "1.6.1") -> None:
        self.name = f"kvmodel RadixTree ({revision})"
        self.probes = []
        self.revision = revision
        self.tree = make_tree(revision)

    def _fresh(self) -> None:
        self.tree = make_tree(self.revision)

    def apply(self, op: dict[str, Any]) -> str | None:
        kind = op["op"]
        try:
            if kind == "apply_event":
                self.tree.apply_event(op["worker_id"], event_from_json(op["event"]))
            else:
                _other_op(self.tree, op)
        except ModelError as e:
            return str(e.id)
        return None

    def observe(self, probes: Sequence[Sequence[int]]) -> dict[str, Any]:
        if self.tree.gone:  # the tree's task panicked: nothing answers any more
            return {"content": None, "scores": [None for _ in probes]}
        content = {_wkey(w): [list(t) for t in v] for w, v in self.tree.content().items()}
        scores = []
        for p in probes:
            s = self.tree.find_matches(list(p))
            scores.append({_wkey(w): n for w, n in sorted(s.items())})
        return {"content": content, "scores": scores}


_ERRORS = (
    ("Failed to find parent block", "ParentBlockNotFound"),
    ("Failed to find block", "BlockNotFound"),
    ("Invalid block sequence", "InvalidBlockSequence"),
    # the background task panicked on this request, and every request after it
    ("RadixTree request was cancelled", "RadixTree request was cancelled"),
    ("background task has shut down", "RadixTree background task has shut down"),
    ("Failed to send", "RadixTree background task has shut down"),
)


def real_available() -> str | None:
    """``None`` when the real RadixTree can be used, else why not."""
    try:
        os.environ.setdefault("DYN_LOG", "error")
        from dynamo._core import RadixTree as _Real  # noqa: F401
    except ImportError as e:
        return f"ai-dynamo-runtime is not installed ({e}); install kvmodel[real]"
    return None


class RealRadixTree(_Stepped):
    """``dynamo._core.RadixTree`` of ``ai-dynamo-runtime==1.6.1`` as an adapter."""

    def __init__(self) -> None:
        os.environ.setdefault("DYN_LOG", "error")
        from dynamo._core import RadixTree as Real

        self._cls = Real
        self.name = "dynamo._core.RadixTree (ai-dynamo-runtime)"
        self.probes = []
        self.tree = Real()
        self.panicked = False

    def _fresh(self) -> None:
        self.tree = self._cls()
        self.panicked = False

    def apply(self, op: dict[str, Any]) -> str | None:
        """The error id of one call. Once the tree's task has panicked, the binding answers a later
        call either "RadixTree request was cancelled" or "... background task has shut down" (a
        race: 77 of 200 runs gave the first for the call right after the panic, on a busy
        machine); both read as the task being gone."""
        kind = op["op"]
        try:
            if kind == "apply_event":
                self.tree.apply_event(op["worker_id"], json.dumps(op["event"]).encode())
            else:
                _other_op(self.tree, op)
        except RuntimeError as e:
            msg = str(e)
            for text, eid in _ERRORS:
                if text in msg:
                    if eid.startswith("RadixTree "):
                        eid = _ERRORS[-1][1] if self.panicked else eid
                        self.panicked = True
                    return eid
            return f"other: {msg}"
        return None

    def content(self) -> Content:
        out: dict[str, set[tuple[Any, ...]]] = {}
        for line in self.tree.dump_tree_as_events():
            r = json.loads(line)
            key = f"{r['worker_id']}:{r['event'].get('dp_rank', 0)}"
            st = r["event"]["data"]["stored"]
            parent = st["parent_hash"]
            for b in st["blocks"]:
                out.setdefault(key, set()).add((parent, b["block_hash"], b["tokens_hash"]))
                parent = b["block_hash"]
        return {
            k: [list(t) for t in sorted(v, key=lambda t: (-1 if t[0] is None else t[0], t[1], t[2]))]
            for k, v in sorted(out.items())
        }

    def observe(self, probes: Sequence[Sequence[int]]) -> dict[str, Any]:
        try:
            content = self.content()
        except RuntimeError:  # the tree's task panicked: nothing answers any more
            return {"content": None, "scores": [None for _ in probes]}
        scores = []
        for p in probes:
            # keyed by (worker_id, dp_rank) tuples at run time, whatever the .pyi says
            s: dict[Any, Any] = dict(self.tree.find_matches(list(p)).scores)
            scores.append({_wkey(w): int(n) for w, n in sorted(s.items())})
        return {"content": content, "scores": scores}


# ----------------------------------------------------------------------------- differential runs


def probes_for(tokens: Sequence[int], length: int) -> list[list[int]]:
    """Every sequence of the local hashes ``tokens`` up to ``length`` (the scores compared)."""
    out: list[list[int]] = []
    for n in range(1, length + 1):
        out += [list(p) for p in itertools.product(tokens, repeat=n)]
    return out


PROBE_CONFIG: dict[str, Any] = {"probe_tokens": [1, 2, 3], "probe_length": 3}
PROBES = probes_for(PROBE_CONFIG["probe_tokens"], PROBE_CONFIG["probe_length"])


def compare(op: str, args: Any, model: dict[str, Any], real: Any, memo: dict[str, Any]) -> Difference | None:
    """The error raised, then the content, then each probe's ``find_matches`` scores."""
    for key in ("error", "content"):
        if model[key] != real[key]:
            return (key, model[key], real[key])
    for (p, sa), (_, sb) in zip(model["scores"], real["scores"], strict=True):
        if sa != sb:
            return (f"find_matches({list(p)})", sa, sb)
    if real.get("unexplained"):  # an invariant the revision's quirks are not recorded to break
        return ("invariant", [], real["unexplained"])
    return None


def actions(ops: Sequence[dict[str, Any]]) -> list[Action]:
    """Operation objects (``{"op": ..., ...}``) as steps: the operation and its arguments."""
    return [(o["op"], {k: v for k, v in o.items() if k != "op"}) for o in ops]


def differential(
    left: RadixAdapter,
    right: RadixAdapter,
    ops: Sequence[dict[str, Any]] | Sequence[Action],
    config: dict[str, Any] = PROBE_CONFIG,
) -> Divergence | None:
    """Run ``ops`` on both (from a reset); compare the error, the content and the scores
    after every operation; the first divergence (:mod:`kvmodel.conformance.differential`)."""
    steps: list[Action] = [
        (o["op"], {k: v for k, v in o.items() if k != "op"}) if isinstance(o, dict) else (o[0], o[1]) for o in ops
    ]
    d, _ = differential_.differential(left, right, config, steps, compare)
    return d


def workload_strategy(max_ops: int = 24, max_blocks: int = 3) -> Any:
    """Adversarial operation lists: few hashes (so they collide), unknown parents (999),
    self-parents, unknown removes, several workers and dp ranks, Cleared, worker removal."""
    from hypothesis import strategies as st

    block = st.integers(100, 106)
    tokens = st.integers(1, 4)
    stored_block = st.builds(
        lambda b, t, tied: {"block_hash": b, "tokens_hash": b - 99 if tied else t},
        block,
        tokens,
        st.integers(0, 3).map(lambda k: k > 0),  # mostly one local hash per block hash, as in real streams
    )
    parent = st.one_of(st.none(), block, st.just(999))
    stored = st.builds(
        lambda p, bs: {"stored": {"parent_hash": p, "blocks": bs}}, parent, st.lists(stored_block, max_size=max_blocks)
    )
    removed = st.builds(
        lambda hs: {"removed": {"block_hashes": hs}}, st.lists(st.one_of(block, st.just(999)), max_size=3)
    )
    data = st.integers(0, 9).flatmap(lambda k: stored if k < 5 else removed if k < 9 else st.just("cleared"))
    event = st.builds(
        lambda w, dp, eid, d: {
            "op": "apply_event",
            "worker_id": w,
            "event": {"event_id": eid, "data": d, "dp_rank": dp},
        },
        st.integers(0, 2),
        st.integers(0, 1),
        st.integers(0, 5),
        data,
    )
    other = st.one_of(
        st.builds(
            lambda hs, e: {"op": "find_matches", "local_hashes": hs, "early_exit": e},
            st.lists(tokens, max_size=4),
            st.booleans(),
        ),
        st.builds(lambda w: {"op": "clear_all_blocks", "worker_id": w}, st.integers(0, 2)),
        st.builds(lambda w: {"op": "remove_worker", "worker_id": w}, st.integers(0, 2)),
    )
    return st.lists(
        st.integers(0, 9).flatmap(lambda k: event if k < 8 else other), min_size=max(1, max_ops // 4), max_size=max_ops
    )


class InvariantWatch:
    """An adapter that passes everything to ``inner`` and judges each of its observations by the
    router's invariants (``invariants/router.py``), from what the real tree shows: the error of
    each operation (``router.rejections_as_documented``), its dump (``router.content_matches_stream``,
    ``router.acyclic``) and the scores of every probe (``router.scores_longest_chain``). Its lookup
    tables and nodes are not shown, so the other two are not judged. ``found`` is what the last
    step violated."""

    JUDGED = (
        "router.rejections_as_documented",
        "router.scores_longest_chain",
        "router.content_matches_stream",
        "router.acyclic",
    )

    def __init__(self, inner: RadixAdapter, known: Sequence[str] = ()) -> None:
        self.inner = inner
        self.known = frozenset(known)  # what the revision's recorded quirks explain
        self.name = inner.name
        self.found: list[tuple[str, str]] = []
        self._fresh_monitor()

    def _fresh_monitor(self) -> None:
        from kvmodel.invariants.router import RouterMonitor

        self.monitor = RouterMonitor()
        self.probes: list[list[int]] = []

    def reset(self, config: dict[str, Any]) -> None:
        self.inner.reset(config)
        self._fresh_monitor()
        self.probes = probes_for(config.get("probe_tokens", []), int(config.get("probe_length", 0)))

    def apply(self, op: dict[str, Any]) -> str | None:
        return self.inner.apply(op)

    def observe(self, probes: Sequence[Sequence[int]]) -> dict[str, Any]:
        return self.inner.observe(probes)

    def step(self, op: str, args: Any) -> dict[str, Any]:
        from kvmodel.components.router.actions import ACTIONS
        from kvmodel.invariants import StepContext, for_component
        from kvmodel.invariants.router import C, TreeView

        obs = self.inner.step(op, args)
        action = ACTIONS.decode(op, args)
        self.monitor.faults = {}
        if op != "find_matches":  # a query's own answer is not kept: the probes below are judged
            self.monitor.observe(op, action, None, obs["error"])
        found = list(self.monitor.faults.items())
        if obs["content"] is not None:
            content: dict[tuple[int, int], tuple[Any, ...]] = {}
            for key, rows in obs["content"].items():
                w, r = (int(x) for x in key.split(":"))
                content[(w, r)] = tuple((p, h, t) for p, h, t in rows)
            ctx = StepContext(TreeView(content), self.monitor, op, action, None, None, [], None, None)
            for inv in for_component(C):
                if inv.name in ("router.content_matches_stream", "router.acyclic"):
                    msg = inv.check(ctx)
                    if msg is not None:
                        found.append((inv.name, msg))
            for probe, scores in obs["scores"]:
                self.monitor.faults = {}
                rows = [[*(int(x) for x in k.split(":")), n] for k, n in sorted(scores.items())]
                self.monitor.judge_scores(_Probe(tuple(probe)), rows)
                for inv_name, msg in self.monitor.faults.items():
                    found.append((inv_name, msg))
                    break
        self.found = found
        new = sorted({n for n, _ in found if n not in self.known})
        return {**obs, "unexplained": new} if new else obs


@attrs.frozen
class _Probe:
    local_hashes: tuple[int, ...]
    early_exit: bool = False


def run(
    left: RadixAdapter,
    right: RadixAdapter,
    *,
    workloads: int,
    seed: int = 0,
    config: dict[str, Any] = PROBE_CONFIG,
    target: str = "dynamo-radix-tree",
    max_ops: int = 24,
    max_blocks: int = 3,
    component: str = "",
    progress: Callable[[int], None] | None = None,
) -> Report:
    """Generate ``workloads`` workloads (seeded), run each on both adapters; on the first
    divergence shrink it (Hypothesis, then 1-minimal deletion) and report it. ``extra["events"]``
    counts the events applied."""

    def tally(rep: Report, op: str, args: Any, model: Any, real: Any) -> None:
        rep.extra["events"] = rep.extra.get("events", 0) + (op == "apply_event")
        if isinstance(right, InvariantWatch):
            seen = rep.extra.setdefault(
                "invariants", {"judged": list(InvariantWatch.JUDGED), "violated_steps": {}, "first": {}}
            )
            for name, msg in dict(right.found).items():
                seen["violated_steps"][name] = seen["violated_steps"].get(name, 0) + 1
                seen["first"].setdefault(name, {"op": op, "args": args, "message": msg})

    rep = Report(right.name, component, quirks=[], seed=seed, target=target, extra={"events": 0})
    return differential_.run(
        left,
        right,
        rep,
        strategy=workload_strategy(max_ops, max_blocks),
        case=lambda ops: (dict(config), actions(ops)),
        compare=compare,
        workloads=workloads,
        tally=tally,
        progress=progress,
    )


def diverges(ops: Sequence[Any], revision: str = "1.6.1") -> bool:
    """Whether ``ops`` (steps, or operation objects) diverge between the model (``revision``) and
    the real tree."""
    return differential(ModelRadixTree(revision), RealRadixTree(), ops) is not None  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- end to end


@attrs.define
class EndToEnd:
    """A KV manager run turned into router events and fed to the real tree and the model."""

    steps: int = 0
    events: int = 0
    router_errors: dict[str, int] = attrs.field(factory=dict)
    model_vs_real: Divergence | None = None
    view_mismatch_steps: int = 0
    orphaned: int = 0  # view hashes the real tree lost: an ancestor was Removed, or it rejected their Stored
    duplicated: int = 0  # hashes the real tree still holds after their Removed: they had been Stored twice
    unexplained: list[dict[str, Any]] = attrs.field(factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "events": self.events,
            "router_errors": dict(sorted(self.router_errors.items())),
            "model_vs_real": self.model_vs_real.to_json() if self.model_vs_real else None,
            "view_mismatch_steps": self.view_mismatch_steps,
            "orphaned_by_ancestor_removal": self.orphaned,
            "kept_after_duplicate_store": self.duplicated,
            "unexplained": self.unexplained[:5],
        }


def kv_manager_to_router(
    quirks: Sequence[str],
    *,
    seed: int,
    steps: int,
    config: dict[str, Any] | None = None,
    real: RadixAdapter | None = None,
) -> EndToEnd:
    """Random KV manager run (the explorer's move set, seeded); each step's Store/Remove
    responses become ``stored``/``removed`` events of worker 0 (local hash = block hash),
    applied to the real tree and to the model tree. The two trees must agree on every
    event (error and content): a disagreement is recorded in ``model_vs_real``. The real
    tree's content is also compared with the KV model's router view (Stored minus
    Removed); each difference is classified: a hash the tree lost because one of its
    ancestors was Removed while it was still resident, or because the router rejected the
    Stored that named it or accepted it under a lost parent (invisibly), is ``orphaned``;
    a hash the tree still holds after its Removed because it had been Stored twice (the
    second Store made a second node) is ``duplicated``; anything else is ``unexplained``."""
    import random

    from kvmodel.components.kv_manager.space import KvSpace
    from kvmodel.components.kv_manager.system import KvManagerSystem
    from kvmodel.model.events import from_responses

    rng = random.Random(seed)
    moves = KvSpace(6, 1, 2, 2).actions()
    sys_ = KvManagerSystem(config or {"max_capacity": 4}, list(quirks))
    real = real or RealRadixTree()
    model = ModelRadixTree()
    real.reset({})
    model.reset({})
    res = EndToEnd()
    children: dict[int | None, set[int]] = {}  # Store lineage: parent hash -> child hashes
    lost: set[int] = set()  # resident hashes whose ancestor the router saw Removed
    announced: set[int] = set()  # Stored and not Removed since, by the events themselves
    doubled: set[int] = set()  # hashes Stored while already announced
    eid = 0
    for i in range(steps):
        out = sys_.step("process", moves[rng.randrange(len(moves))].to_json())
        res.steps += 1
        for ev in from_responses(out.events, lambda h: h + 1, first_event_id=eid):
            eid += 1
            res.events += 1
            op = {"op": "apply_event", "worker_id": 0, "event": ev.to_json()}
            a, b = model.apply(op), real.apply(op)
            if b is not None:
                res.router_errors[b] = res.router_errors.get(b, 0) + 1
            ca, cb = model.observe([]), real.observe([])
            if res.model_vs_real is None and (a != b or ca["content"] != cb["content"]):
                what = "error" if a != b else "content"
                res.model_vs_real = Divergence(i, "apply_event", op, what, [a, ca], [b, cb])
            data = ev.data
            if isinstance(data, Stored) and b is not None:
                lost.update(blk.block_hash for blk in data.blocks)  # the router rejected the whole Stored
            elif isinstance(data, Stored):
                # Accepted under a parent the router lost: accepted, but as invisible.
                under_lost = data.parent_hash is not None and data.parent_hash in lost
                prev = data.parent_hash
                for blk in data.blocks:
                    if blk.block_hash in announced:  # Stored again before its Removed: a second node
                        doubled.add(blk.block_hash)
                    announced.add(blk.block_hash)
                    children.setdefault(prev, set()).add(blk.block_hash)
                    if under_lost:
                        lost.add(blk.block_hash)
                    else:
                        lost.discard(blk.block_hash)
                    prev = blk.block_hash
            elif isinstance(data, Removed):
                announced.difference_update(data.block_hashes)
                # Every descendant still resident is cut off from the root in the router.
                todo = [c for h in data.block_hashes for c in children.get(h, ())]
                while todo:
                    c = todo.pop()
                    if c in sys_.monitor.view and c not in lost:
                        lost.add(c)
                        todo.extend(children.get(c, ()))
        view = set(sys_.monitor.view)
        held = {t[1] for t in real.observe([])["content"].get("0:0", [])}
        if view != held:
            res.view_mismatch_steps += 1
            for h in view - held:
                if h in lost:
                    res.orphaned += 1
                else:
                    res.unexplained.append({"step": i, "hash": h, "kind": "in view, not in the real tree"})
            for h in held - view:
                if h in doubled:
                    res.duplicated += 1
                else:
                    res.unexplained.append({"step": i, "hash": h, "kind": "in the real tree, not in view"})
    return res
