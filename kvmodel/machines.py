"""Hypothesis rule-based state machines over the systems, and the engine that runs them.

The machines live in the package (not only in the test suite) so that ``kvmodel check``
and ``pytest`` run the very same machines. Every step goes through the component's
:class:`~kvmodel.systems.System`, so every registered invariant is checked after every
step; a violation fails the example, Hypothesis shrinks it, and the shrunk run is
re-recorded as a trace in the trace format.

Bad inputs are generated on purpose: operations on blocks that are not there, partial
blocks in the wrong place, malformed JSON arguments. Each must raise its documented
error (and a malformed argument must leave the state as it was).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from typing import Any, ClassVar

import attrs
from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from kvmodel import determinism, traces
from kvmodel.model import errors as E
from kvmodel.model.blocks import Deref, Destroy, FullBlock, MoveBlock, PartialBlock, Promote, UniqueBlock, Use
from kvmodel.systems import KvManagerSystem, LruSystem, Outcome, RegistrySystem, System, make_system


class InvariantViolated(AssertionError):
    """Raised inside a machine when a step breaks a (targeted) invariant."""


class WrongError(AssertionError):
    """Raised inside a machine when a bad input did not raise its documented error."""


DOCUMENTED: dict[type, tuple[type[E.ModelError], ...]] = {
    Use: (E.ParentBlockPartial, E.PartialNotLast),
    Destroy: (E.DestroyNotActive, E.DestroyNotResident),
    Deref: (E.DerefNotHeld,),
    Promote: (E.PromoteMissing, E.PromoteNotResident, E.PromoteParentUnknown),
}


class _Base(RuleBasedStateMachine):
    component: ClassVar[str]
    config: ClassVar[dict[str, Any]]
    quirks: ClassVar[frozenset[str]]
    target: ClassVar[frozenset[str] | None] = None
    failures: ClassVar[list[tuple[list[tuple[str, Any]], str, str]]]
    steps_run: ClassVar[list[int]]
    first_failure_at: ClassVar[list[float]]

    def __init__(self) -> None:
        super().__init__()
        self.system: System = make_system(self.component, dict(self.config), self.quirks)
        self.log: list[tuple[str, Any]] = []

    def _run(self, op: str, decoded: Any) -> Outcome:
        out = self.system.apply(op, decoded)
        self.log.append((op, out.args_json))
        self.steps_run[0] += 1
        self._judge(out)
        return out

    def _run_json(self, op: str, args: Any) -> Outcome:
        out = self.system.step(op, args)
        self.log.append((op, args))
        self.steps_run[0] += 1
        self._judge(out)
        return out

    def _judge(self, out: Outcome) -> None:
        for v in out.violations:
            if self.target is None or v.invariant in self.target:
                if not self.failures:
                    self.first_failure_at.append(time.perf_counter())
                self.failures.append((list(self.log), v.invariant, v.message))
                raise InvariantViolated(f"{v.invariant}: {v.message}")


class KvManagerMachine(_Base):
    """Rules: Use (well-formed and arbitrary), Deref, Destroy, Promote, probes, malformed input."""

    component = "kv_manager"
    config: ClassVar[dict[str, Any]] = dict(KvManagerSystem.DEFAULTS)
    quirks = frozenset()
    partials = Bundle("partials")

    def __init__(self) -> None:
        super().__init__()
        self._fresh = 0
        n = int(self.config["max_capacity"]) + 2
        self.universe = n

    # -- strategies built once per class (the universe depends on the configuration);
    # building them per draw made Hypothesis re-validate them every time.
    _cache: ClassVar[dict[str, Any]]

    @classmethod
    def _static(cls) -> dict[str, Any]:
        cache = cls.__dict__.get("_cache")
        if cache is None:
            fulls = st.integers(0, int(cls.config["max_capacity"]) + 1).map(FullBlock)
            partials: st.SearchStrategy[str] = cls.partials
            cache = {
                "fulls": fulls,
                "any": st.one_of(fulls, partials.map(PartialBlock)),
                "bool": st.booleans(),
                "idx": st.integers(0, 63),
                "len": st.integers(0, 15),
                "tail": st.none() | partials,
            }
            cls._cache = cache
        return cache

    @classmethod
    def fulls(cls) -> st.SearchStrategy[FullBlock]:
        s: st.SearchStrategy[FullBlock] = cls._static()["fulls"]
        return s

    @initialize(target=partials)
    def first_partial(self) -> str:
        return self.new_name()

    def new_name(self) -> str:
        self._fresh += 1
        return f"p{self._fresh}"

    @rule(target=partials)
    def new_partial(self) -> str:
        return self.new_name()

    # -- drawing from the current state. Strategies built from the state on every draw
    # (sampled_from(known)) cost Hypothesis a validation each time; instead a static
    # integer picks an index into the known blocks (small indices shrink to the first).

    def _pick(self, data: st.DataObject, items: list[Any], label: str) -> Any:
        return items[data.draw(self._static()["idx"], label=label) % len(items)]

    def _coin(self, data: st.DataObject, label: str) -> bool:
        b: bool = data.draw(self._static()["bool"], label=label)
        return b

    def _known(self, full_only: bool = False) -> list[UniqueBlock]:
        m = self.system.model
        ks = set(m.active) | set(m.inactive.keys())
        return sorted((b for b in ks if not full_only or isinstance(b, FullBlock)), key=lambda b: b.sort_key())

    def _draw_block(self, data: st.DataObject) -> UniqueBlock:
        """Half the time a block the manager knows (active or inactive), else any block."""
        known = self._known()
        if known and self._coin(data, "known"):
            b: UniqueBlock = self._pick(data, known, "block")
            return b
        anyb: UniqueBlock = data.draw(self._static()["any"], label="block")
        return anyb

    def _draw_full(self, data: st.DataObject) -> FullBlock:
        known = self._known(full_only=True)
        if known and self._coin(data, "known"):
            b: FullBlock = self._pick(data, known, "full")
            return b
        return data.draw(self.fulls(), label="full")

    def _draw_len(self, data: st.DataObject, lo: int, hi: int) -> int:
        n: int = data.draw(self._static()["len"], label="len")
        return lo + n % (hi - lo + 1)

    def _blocks(self, data: st.DataObject, min_size: int, max_size: int) -> tuple[UniqueBlock, ...]:
        """Either only blocks currently held (active), or anything: chosen per list, so that
        well-formed releases are common while bad ones are still generated."""
        held = sorted(self.system.model.active, key=lambda b: b.sort_key())
        n = self._draw_len(data, min_size, max_size)
        if held and self._coin(data, "held_only"):
            picked: list[UniqueBlock] = []
            for _ in range(n):
                b = self._pick(data, held, "held")
                if b not in picked:
                    picked.append(b)
            return tuple(picked)
        return tuple(self._draw_block(data) for _ in range(n))

    def _expect(self, sig: MoveBlock, out: Outcome, pre_active: dict[UniqueBlock, int]) -> None:
        err = out.error
        if err is not None and not isinstance(err, DOCUMENTED[type(sig)]):
            raise WrongError(f"{sig.to_json()} raised undocumented {type(err).__name__}: {err}")
        if isinstance(sig, Destroy) and any(b not in pre_active for b in sig.blocks):
            if not isinstance(err, E.DestroyNotActive):
                raise WrongError(f"Destroy of a non-active block did not raise: {sig.to_json()}")
        if isinstance(sig, Promote) and PartialBlock(sig.uuid) not in pre_active:
            if not isinstance(err, E.PromoteMissing):
                raise WrongError(f"Promote of a non-active partial did not raise: {sig.to_json()}")

    def _process(self, sig: MoveBlock) -> None:
        m = self.system.model
        pre_active = dict(m.active)
        out = self._run("process", sig)
        self._expect(sig, out, pre_active)

    @rule(data=st.data())
    def use(self, data: st.DataObject) -> None:
        """A well-formed Use: full blocks, then at most one partial at the end."""
        n = self._draw_len(data, 0, int(self.config["max_capacity"]) + 1)
        fulls = [self._draw_full(data) for _ in range(n)]
        tail = data.draw(self._static()["tail"], label="tail")
        blocks = tuple(fulls) + ((PartialBlock(tail),) if tail is not None else ())
        self._process(Use(blocks))

    @rule(data=st.data())
    def use_any(self, data: st.DataObject) -> None:
        """Any mix, partials anywhere (bad input for the ideal model)."""
        n = self._draw_len(data, 0, 4)
        self._process(Use(tuple(self._draw_block(data) for _ in range(n))))

    @rule(data=st.data())
    def deref(self, data: st.DataObject) -> None:
        self._process(Deref(self._blocks(data, 1, 3)))

    @rule(data=st.data())
    def destroy(self, data: st.DataObject) -> None:
        self._process(Destroy(self._blocks(data, 1, 2)))

    @rule(data=st.data())
    def promote(self, data: st.DataObject) -> None:
        m = self.system.model
        live = sorted(b.uuid for b in m.active if isinstance(b, PartialBlock))
        if live and self._coin(data, "live"):
            uuid: str = self._pick(data, live, "uuid")
        else:
            uuid = data.draw(self.partials, label="uuid")
        h = self._draw_full(data).hash
        parent = None if self._coin(data, "no_parent") else self._draw_full(data).hash
        self._process(Promote(uuid, h, parent))

    @rule(data=st.data())
    def probe(self, data: st.DataObject) -> None:
        blocks = [data.draw(self.fulls(), label="full") for _ in range(self._draw_len(data, 0, 3))]
        out = self._run("probe_new_blocks", tuple(blocks))
        m = self.system.model
        assert out.result == sum(1 for b in blocks if b not in m.all_blocks)
        self._run("current_capacity", None)

    @rule(
        args=st.sampled_from(
            [
                {"Use": [{"F": -1}]},
                {"Use": [{"F": 1 << 64}]},
                {"Use": "not a list"},
                {"Deref": [{"X": 1}]},
                {"Promote": {"uuid": 7, "hash": 1}},
                {"Promote": {"uuid": "p1"}},
                {"Frobnicate": []},
                [],
            ]
        )
    )
    def malformed(self, args: Any) -> None:
        before = self.system.key()
        out = self._run_json("process", args)
        if not isinstance(out.error, E.InvalidInput):
            raise WrongError(f"malformed {args!r} gave {out.error!r}, not InvalidInput")
        if self.system.key() != before:
            raise WrongError(f"malformed {args!r} changed the state")


class LruMachine(_Base):
    """Rules: insert (same or later clock), remove, evict, len, push_front (counter only)."""

    component = "lru_evictor_wallclock"
    config: ClassVar[dict[str, Any]] = {"cleanup_threshold": 2}  # stale queue entries survive a while
    quirks = frozenset()

    def __init__(self) -> None:
        super().__init__()
        self.clock = 0

    objs = st.integers(0, 4)

    @rule(obj=objs, tick=st.booleans())
    def insert(self, obj: int, tick: bool) -> None:
        self.clock += int(tick)
        self._run("insert", {"object": obj, "clock": self.clock})

    @rule(obj=objs)
    def remove(self, obj: int) -> None:
        self._run("remove", {"object": obj})

    @rule()
    def evict(self) -> None:
        self._run("evict", {})

    @rule()
    def length(self) -> None:
        self._run("len", {})

    @rule(obj=objs)
    def push_front(self, obj: int) -> None:
        if self.component == "lru_evictor_counter":
            self._run("push_front", {"object": obj})


class RegistryMachine(_Base):
    """Rules over the registry world: block states (complete, reset, partial), register_block in
    any pool, publish handles, publishers (take, publish, clone), caller Arcs, drops of anything,
    the unregister task's drain steps, and bad input (unknown names, wrong kinds, bad states)."""

    component = "kvbm_block_registry"
    config: ClassVar[dict[str, Any]] = dict(RegistrySystem.DEFAULTS)
    quirks = frozenset()

    idx = st.integers(0, 63)
    hashes = st.integers(0, 1)

    def __init__(self) -> None:
        super().__init__()
        self.fresh = 0

    def _name(self) -> str:
        self.fresh += 1
        return f"v{self.fresh}"

    def _has(self, kind: str) -> bool:
        from kvmodel.model.registry import kind_of

        return any(kind_of(v) == kind for v in self.system.model.values.values())

    @initialize()
    def first_publisher(self) -> None:
        self._run_json("new_publisher", {"as": self._name()})

    def _names(self, kind: str) -> list[str]:
        from kvmodel.model.registry import kind_of

        return sorted(n for n, v in self.system.model.values.items() if kind_of(v) == kind)

    def _pick(self, data: st.DataObject, items: list[Any], label: str) -> Any:
        return items[data.draw(self.idx, label=label) % len(items)]

    def _flip(self, data: st.DataObject, label: str) -> bool:
        b: bool = data.draw(st.booleans(), label=label)
        return b

    def _pool(self, data: st.DataObject) -> str:
        pools: list[str] = sorted(self.system.model.pools)
        p: str = self._pick(data, pools, "registry")
        return p

    def _expect(self, out: Outcome, *allowed: type[Exception]) -> None:
        if out.error is not None and not isinstance(out.error, allowed):
            raise WrongError(f"{out.op} {out.args_json} raised undocumented {type(out.error).__name__}: {out.error}")

    @rule(h=hashes)
    def complete_state(self, h: int) -> None:
        self._run_json("state_from_reset_apply_token_block", {"as": self._name(), "block": {"hash": h}})

    @rule(data=st.data(), new=st.none() | hashes)
    def register(self, data: st.DataObject, new: int | None) -> None:
        """register_block of a new Complete state of hash ``new``, or of an existing state
        (mostly a Complete one; sometimes any, so Reset/Partial/Registered are rejected)."""
        from kvmodel.model.registry import BlockAlreadyRegistered, InvalidState

        m = self.system.model
        if new is not None:
            self.complete_state(new)
        states = self._names("state")
        if not states:
            return
        if new is not None:
            name = f"v{self.fresh}"
        else:
            fresh = [n for n in states if getattr(m.values[n], "kind", "") == "Complete"]
            name = self._pick(data, fresh if fresh and self._flip(data, "fresh") else states, "state")
        h = getattr(getattr(m.values[name], "block", None), "sequence_hash", None)
        # Targeted: half the time, a pool whose unregister channel still carries this hash's
        # earlier drop (the interleaving the cleanup task races with).
        racing = sorted(n for n, p in m.pools.items() if h in p.pending)
        if racing and self._flip(data, "racing"):
            pool = self._pick(data, racing, "registry")
        else:
            pool = self._pool(data)
        out = self._run_json("register_block", {"registry": pool, "state": name, "as": self._name()})
        self._expect(out, BlockAlreadyRegistered, InvalidState)
        listed = self._run_json("is_registered", {"registry": pool, "hash": h if h is not None else 0})
        if out.error is None and listed.result is not True:
            raise WrongError(f"{name} registered in {pool} but is_registered says {listed.result}")

    @precondition(lambda self: self._has("state"))
    @rule(data=st.data())
    def drop_state(self, data: st.DataObject) -> None:
        """Drop a block state (a registered one releases its handles; the pool's task is told)."""
        names = self._names("state")
        if names:
            self._run_json("drop", {"value": self._pick(data, names, "state")})

    @rule(data=st.data())
    def drain(self, data: st.DataObject) -> None:
        """One step of a pool's unregister task; a pool with pending drops is picked first."""
        m = self.system.model
        busy = sorted(n for n, p in m.pools.items() if p.pending)
        pool = self._pick(data, busy, "registry") if busy else self._pool(data)
        self._run_json("drain", {"registry": pool})

    @precondition(lambda self: bool(self.system.model.values))
    @rule(data=st.data())
    def drop(self, data: st.DataObject) -> None:
        names = sorted(self.system.model.values)
        if names:
            self._run_json("drop", {"value": self._pick(data, names, "value")})

    @precondition(lambda self: self._has("publish_handle") and self._has("publisher"))
    @rule(data=st.data(), keep=st.booleans())
    def take_handle(self, data: st.DataObject, keep: bool) -> None:
        phs, pubs = self._names("publish_handle"), self._names("publisher")
        if phs and pubs:
            args = {"publisher": self._pick(data, pubs, "pub"), "publish_handle": self._pick(data, phs, "ph")}
            if keep:
                args["as"] = self._name()
            self._run_json("take_handle", args)

    @precondition(lambda self: self._has("publisher"))
    @rule(data=st.data())
    def publish(self, data: st.DataObject) -> None:
        pubs = self._names("publisher")
        if pubs:
            self._run_json("publish", {"publisher": self._pick(data, pubs, "pub")})

    @precondition(lambda self: self._has("publish_handle"))
    @rule(data=st.data())
    def remove_handle(self, data: st.DataObject) -> None:
        phs = self._names("publish_handle")
        if phs:
            self._run_json("remove_handle", {"publish_handle": self._pick(data, phs, "ph"), "as": self._name()})

    @precondition(lambda self: self._has("publisher"))
    @rule(data=st.data())
    def clone_publisher(self, data: st.DataObject) -> None:
        pubs = self._names("publisher")
        if pubs:
            self._run_json("clone_publisher", {"publisher": self._pick(data, pubs, "pub"), "as": self._name()})

    @rule()
    def settle(self) -> None:
        """Every unregister task runs to quiescence (what a tokio runtime does when idle)."""
        m = self.system.model
        for name in sorted(m.pools):
            while m.pools[name].pending:
                self._run_json("drain", {"registry": name})

    @rule(data=st.data(), size=st.integers(1, 3), n=st.integers(0, 4))
    def partial_state(self, data: st.DataObject, size: int, n: int) -> None:
        """A state through initialize_sequence / add_tokens / commit, each possibly rejected."""
        from kvmodel.model.registry import StateNotPartial, StateNotReset, TokenBlockFull, TokenBlockIncomplete

        name = self._name()
        self._run_json("new_state", {"as": name})
        out = self._run_json("initialize_sequence", {"state": name, "page_size": size})
        self._expect(out, StateNotReset)
        if n:
            out = self._run_json("add_tokens", {"state": name, "tokens": list(range(n))})
            self._expect(out, StateNotPartial, TokenBlockFull)
        if data.draw(st.booleans(), label="commit"):
            out = self._run_json("commit", {"state": name})
            self._expect(out, StateNotPartial, TokenBlockIncomplete)

    @rule(
        op_args=st.sampled_from(
            [
                ("drop", {"value": "nobody"}),
                ("drop", {}),
                ("register_block", {"registry": "nowhere", "state": "nobody"}),
                ("register_block", {"registry": "device0"}),
                ("publish", {"publisher": 3}),
                ("drain", {"registry": ["device0"]}),
                ("state_from_reset_apply_token_block", {"block": {"hash": -1}}),
                ("state_from_reset_apply_token_block", {"block": 5}),
                ("frobnicate", {}),
                ("new_registry", {"as": "device0", "tier": "Device"}),
                ("new_registry", {"as": "elsewhere", "tier": "Moon"}),
            ]
        ),
        data=st.data(),
    )
    def malformed(self, op_args: tuple[str, dict[str, Any]], data: st.DataObject) -> None:
        """Unknown names, wrong kinds and malformed arguments: InvalidInput, nothing changes.
        Also a name of the wrong kind (a publisher given where a state is expected)."""
        op, args = op_args
        names = sorted(self.system.model.values)
        if names and self._flip(data, "wrong_kind"):
            op, args = "take_handle", {"publisher": self._pick(data, names, "x"), "publish_handle": "nobody"}
        before = self.system.key()
        out = self._run_json(op, args)
        if not isinstance(out.error, E.InvalidInput):
            raise WrongError(f"malformed {op} {args!r} gave {out.error!r}, not InvalidInput")
        if self.system.key() != before:
            raise WrongError(f"malformed {op} {args!r} changed the state")


# ------------------------------------------------------------------------------ engine


@attrs.define
class HypothesisResult:
    component: str
    mode: str
    quirks: list[str]
    seed: int
    examples: int
    steps: int
    seconds: float
    violation: dict[str, Any] | None = None
    trace: dict[str, Any] | None = None
    error: str | None = None
    seconds_to_first_failure: float | None = None

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "component": self.component,
            "engine": "hypothesis",
            "mode": self.mode,
            "quirks": self.quirks,
            "seed": self.seed,
            "examples": self.examples,
            "steps": self.steps,
            "seconds": round(self.seconds, 3),
            "steps_per_second": round(self.steps_per_second, 1),
            "violation": self.violation,
            "error": self.error,
        }


class G1Machine(_Base):
    """The G1 facade with the native backend, driven by request-level moves (the explorer's
    :class:`~kvmodel.explorer.G1Space`, wider: three requests, three prompts, three decode
    tokens each, decode reservations of two slots). One rule picks an enabled move."""

    component = "g1_native"
    config: ClassVar[dict[str, Any]] = {"max_capacity": 3}
    quirks = frozenset()

    def __init__(self) -> None:
        from kvmodel.explorer import G1Space

        super().__init__()
        self.space = G1Space(owners=3, prompts=3, pushes=3, decode=2)
        self.moves = self.space.moves()

    @rule(pick=st.integers(0, 10_000))
    def move(self, pick: int) -> None:
        enabled = [m for m in self.moves if self.space.allows(self.system, m)]
        if not enabled:
            return
        op, _, args = self.space.concrete(self.system, enabled[pick % len(enabled)])
        self._run_json(op, args)


class KvbmMachine(G1Machine):
    """The G1 facade with the KVBM backend, driven by request-level moves (the explorer's
    :class:`~kvmodel.explorer.KvbmSpace`, wider: three requests, all five prompts, two decode
    tokens each, decode reservations of two slots, capacity 3); the same rule as the native one."""

    component = "g1_kvbm"
    config: ClassVar[dict[str, Any]] = {"max_capacity": 3, "plh_fragments": 2}
    quirks = frozenset()

    def __init__(self) -> None:
        from kvmodel.explorer import KvbmSpace

        _Base.__init__(self)
        self.space = KvbmSpace(owners=3, prompts=5, pushes=2, decode=2)  # type: ignore[assignment]
        self.moves = self.space.moves()


MACHINES: dict[str, type[_Base]] = {
    "g1_native": G1Machine,
    "g1_kvbm": KvbmMachine,
    "kv_manager": KvManagerMachine,
    "lru_evictor_wallclock": LruMachine,
    "lru_evictor_counter": LruMachine,
    "kvbm_block_registry": RegistryMachine,
}


def machine_for(
    component: str,
    config: dict[str, Any] | None = None,
    quirks: Iterable[str] = (),
    target: Iterable[str] | None = None,
) -> type[_Base]:
    """A fresh machine class bound to one configuration (class state is per class): the
    machine's own world (its class ``config``) with ``config`` on top."""
    base = MACHINES[component]
    config = {**base.config, **(config or {})}
    sys_ = make_system(component, config, quirks)  # validates config and quirks
    attrs_: dict[str, Any] = {
        "component": component,
        "config": sys_.config,
        "quirks": sys_.quirks,
        "target": None if target is None else frozenset(target),
        "failures": [],
        "steps_run": [0],
        "first_failure_at": [],
    }
    if isinstance(sys_, LruSystem):
        attrs_["config"] = sys_.config
    return type(f"{base.__name__}_{component}", (base,), attrs_)


def run(
    component: str,
    *,
    config: dict[str, Any] | None = None,
    quirks: Iterable[str] = (),
    mode: str = "custom",
    seed: int = 0,
    max_examples: int = 200,
    steps: int = 30,
    target: Iterable[str] | None = None,
) -> HypothesisResult:
    """Run one machine; on a violation, return the shrunk counterexample as a trace."""
    determinism.pin()
    quirk_list = sorted(quirks)
    machine = machine_for(component, config, quirk_list, target)
    setattr(machine, "_hypothesis_internal_use_seed", seed)  # noqa: B010 - read by Hypothesis
    examples = [0]
    orig_init = machine.__init__

    def counting_init(self: Any) -> None:
        examples[0] += 1
        orig_init(self)

    machine.__init__ = counting_init  # type: ignore[method-assign]
    s = settings(
        max_examples=max_examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
        print_blob=False,
        phases=[Phase.generate, Phase.shrink],
    )
    res = HypothesisResult(component, mode, quirk_list, seed, 0, 0, 0.0)
    t0 = time.perf_counter()
    try:
        run_state_machine_as_test(machine, settings=s)
    except InvariantViolated:
        log, inv, msg = machine.failures[-1]
        log = traces.minimize(component, dict(machine.config), quirk_list, log, inv)
        trace = traces.record(
            component,
            dict(machine.config),
            quirk_list,
            log,
            origin={"engine": "hypothesis", "seed": seed, "max_examples": max_examples, "mode": mode},
            target=machine.target,
        )
        res.trace = trace
        res.violation = trace["violation"] or {"invariant": inv, "step": len(log) - 1, "message": msg}
    except (WrongError, Flaky) as e:
        res.error = f"{type(e).__name__}: {e}"
    res.seconds = time.perf_counter() - t0
    if machine.first_failure_at:
        res.seconds_to_first_failure = machine.first_failure_at[0] - t0
    res.examples = examples[0]
    res.steps = machine.steps_run[0]
    return res


def quirk_breakage(trace: dict[str, Any]) -> Counter[str]:
    """Which invariants a trace's violation names (helper for summaries)."""
    v = trace.get("violation") or {}
    return Counter([v.get("invariant", "?")])
