"""What a component is: one record that every engine, command and tool looks up.

A :class:`Component` gathers what the rest of the package needs to know about one modelled
piece of Dynamo — its name and aliases, its :class:`~kvmodel.systems.System` and default
configuration, its bounded worlds (the explorer's ``Space``), its Hypothesis machine, its Z3
spec and universe, the world ``kvmodel check`` runs it in, its command-line options, its
conformance targets, vector harnesses and seeded bugs. The records live in
``kvmodel/components/<name>/__init__.py`` and are registered in :mod:`kvmodel.components`;
nothing outside those files branches on a component's name.

A record is data: the parts it names in other modules are ``"package.module:attr"`` strings
(:class:`Ref`), imported the first time an engine uses them, so that looking a component up
imports nothing heavy (Hypothesis, Z3, the real wheel) and no record imports the modules that
use it. A record built at run time (the test suite's toy) may give the values themselves.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from kvmodel import workloads

if TYPE_CHECKING:
    from kvmodel.explorer import Space
    from kvmodel.mutants import Mutant
    from kvmodel.specs import Spec
    from kvmodel.systems import System
    from kvmodel.vectors.harness import Harness


@attrs.frozen
class Ref:
    """A ``"package.module:attr"`` reference (``"package.module"``: the module), imported on first
    use and read from its module at each use; ``args`` go before the caller's when the target is
    called (one factory serving two records, as the LRU evictors' do)."""

    path: str
    args: tuple[Any, ...] = ()

    def get(self) -> Any:
        return _target(self.path)

    def __call__(self, *args: Any, **kw: Any) -> Any:
        return self.get()(*self.args, *args, **kw)


def _target(path: str) -> Any:
    """The module (imported once, as any import) and attribute ``path`` names, looked up at each
    use, so that a part replaced on its module (a test's monkeypatch) is the one used."""
    module, _, attr = path.partition(":")
    m = importlib.import_module(module)
    return functools.reduce(getattr, attr.split("."), m) if attr else m


def resolve(part: Any) -> Any:
    """What a record's field names: the target of a :class:`Ref`, or the value given."""
    return part.get() if isinstance(part, Ref) else part


def _part(x: Any) -> Any:
    return Ref(x) if isinstance(x, str) else x


# The commands whose options a component declares.
EXPLORE, SPEC = "explore", "spec"  # SPEC: prove and bmc


@attrs.frozen
class Option:
    """One command-line option of a component's worlds (``--NAME``, dashes for underscores).

    ``kind`` is ``int`` (in ``lo .. hi``), ``flag`` (store-true) or ``choice`` (one of
    ``choices``). The value goes to ``key`` (default ``name``) of the explorer's ``space`` or of
    the system's ``config`` (``part``); a flag with ``invert`` sets its key to ``False``.
    ``default`` is the explorer default (``None``: the world's own); spec options pass only
    what the user gave (the spec's defaults otherwise).
    """

    name: str
    help: str
    commands: tuple[str, ...] = (EXPLORE, SPEC)
    kind: str = "int"
    lo: int = 0
    hi: int = 0
    choices: tuple[str, ...] = ()
    default: Any = None
    key: str | None = None
    part: str = "space"
    invert: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def target(self) -> str:
        return self.key or self.name

    def describe(self) -> str:
        rng = f"{self.lo} .. {self.hi}" if self.kind == "int" else "/".join(self.choices) if self.choices else ""
        d = f", default {self.default}" if self.default is not None and self.kind != "flag" else ""
        return f"{self.help}" + (f" ({rng}{d})" if rng or d else "")


def _as_dict(m: Mapping[str, Any]) -> dict[str, Any]:
    return dict(m)


@attrs.frozen
class World:
    """A bounded world: the system's configuration and the explorer space's parameters."""

    config: Mapping[str, Any] = attrs.field(factory=dict, converter=_as_dict)
    space: Mapping[str, Any] = attrs.field(factory=dict, converter=_as_dict)


@attrs.frozen
class CheckProfile:
    """How ``kvmodel check`` (and the mutation benchmark) runs the component: the world the
    explorer searches exhaustively, and the BMC depth and Z3 universe of the per-quirk BMC
    (``None``: the spec universe of the explore world). Hypothesis runs in the machine's own
    world (a world machine's drawn ones)."""

    explore: World = World()
    bmc_depth: int = 6
    z3_universe: Mapping[str, Any] | None = None


@attrs.frozen
class ConformTarget:
    """A real implementation the component is checked against (``kvmodel conform --target``).

    ``available()`` says why the real part is missing (``None``: present); ``run(workloads,
    seed, max_ops, revision, progress)`` returns the report as JSON
    (:class:`kvmodel.conformance.differential.Report`: ``divergences``, ``first_divergence``,
    ``counterexample``, ``config``, ``steps``, ``seconds``, ``verdict``, a target's tallies);
    ``describe(report)`` the lines ``kvmodel conform`` prints; ``in_check``: whether
    ``kvmodel check`` runs it; ``paths``: the event paths ``--path`` accepts (first: default);
    ``revisions``: the model revisions ``--revision`` accepts
    (first: default); ``counterexample_key``: the name of the divergent workload in the file
    written to ``--out``."""

    name: str
    title: str
    available: Callable[[], str | None] = attrs.field(converter=_part)
    run: Callable[..., dict[str, Any]] = attrs.field(converter=_part)
    describe: Callable[[dict[str, Any]], list[str]] = attrs.field(converter=_part)
    in_check: bool = True
    revisions: tuple[str, ...] = ()
    counterexample_key: str = "operations"
    check_workloads: int = 200
    # how the real events may reach a router (``kvmodel conform --path``; first: default): ``raw``
    # (into ``RadixTree``), ``publisher`` / ``indexer`` (Dynamo's deployed paths)
    paths: tuple[str, ...] = ("raw",)
    # whether a divergent operation list diverges from the real implementation (re-checked
    # outside a mutant by the mutation benchmark); None: not re-checkable
    diverges: Callable[[Any], bool] | None = attrs.field(default=None, converter=_part)


@attrs.frozen
class Component:
    """One modelled component of Dynamo (see the module docstring)."""

    name: str
    title: str
    real_code: str
    aliases: tuple[str, ...] = ()
    # Each part below is a "module:attr" reference (:class:`Ref`) or, in a record built at run
    # time, the value itself. Factories: ``system(config, quirks) -> System``, the explorer's
    # ``space(**parameters) -> Space``, the Z3 spec's ``spec(config, quirks) -> Spec``.
    system: Callable[[dict[str, Any] | None, Iterable[str] | None], System] | None = attrs.field(
        default=None, converter=_part
    )
    space: Callable[..., Space] | None = attrs.field(default=None, converter=_part)
    options: tuple[Option, ...] = ()
    # Hypothesis: the machine class
    machine: Any = attrs.field(default=None, converter=_part)
    spec: Callable[[dict[str, Any], Iterable[str]], Spec] | None = attrs.field(default=None, converter=_part)
    # the spec universe of an explore world
    universe: Callable[[World], dict[str, Any]] | None = attrs.field(default=None, converter=_part)
    # the quirks the spec's world cannot reach (checked by Hypothesis and the explorer only)
    spec_skips: frozenset[str] = frozenset()
    profile: CheckProfile = CheckProfile()
    # differential checking of users' implementations: the workload world (the explorer space's
    # parameters), the operations the generator draws besides its moves (``api_ops() ->
    # tuple[kvmodel.workloads.ApiOp, ...]``: queries, operations the explorer does not move) and
    # the queries drawn with no arguments
    api_world: Mapping[str, Any] | None = None
    api_ops: Callable[[], tuple[Any, ...]] | None = attrs.field(default=None, converter=_part)
    queries: tuple[str, ...] = ()
    # move kinds drawn more (or less) often than the default (``kvmodel.workloads.MOVE_WEIGHT``):
    # those that need a long set-up to be enabled
    api_weights: Mapping[str, int] = attrs.field(factory=dict, converter=_as_dict)
    # the longest workload by default (``check_implementation(max_steps=None)``): worlds whose
    # observable effects need long set-ups get longer workloads
    api_steps: int = 30
    # event fields that hold the model's own numbering of objects (the registry's handle ids):
    # compared up to a one-to-one renaming kept over a run (``kvmodel.api.Renaming``)
    renamed_fields: tuple[str, ...] = ()
    # the adapter contract (docs/contracts.md): ``(operations, events, model modules, returns
    # shapes, notes)`` — operation -> (arguments, what ``returns`` holds), the events and how they
    # compare, the ``kvmodel.model`` modules whose raises the operations reach, operation -> the
    # shape of its ``returns``, and paragraphs of notes (``kvmodel.contracts``)
    contract: Any = attrs.field(default=None, converter=_part)
    # the Z3 agreement runs of the mutation benchmark: ``agreement() -> (spec universe, moves)``
    agreement: Callable[[], tuple[dict[str, Any], list[Any]]] | None = attrs.field(default=None, converter=_part)
    conform: tuple[ConformTarget, ...] = ()
    # the vector harnesses (``tuple[type[Harness], ...]``) and the seeded bugs (``tuple[Mutant, ...]``)
    vectors: Any = attrs.field(default=None, converter=_part)
    mutants: Any = attrs.field(default=None, converter=_part)
    # more explorer worlds pinned in specs/manifest.json: (name, world, quirks)
    manifest_worlds: tuple[tuple[str, World, tuple[str, ...]], ...] = ()
    # the component's sections of docs/findings.md (tools/gen_findings.py): a module with
    # ``CONSEQUENCE`` (quirk -> consequence), ``binary(quirk)`` and ``section(helpers)``
    findings: Any = attrs.field(default=None, converter=_part)
    # quirks, revisions and ``(invariants, witnesses)`` a component added at run time brings (the
    # built-in ones are in the model's catalogue, kvmodel/model/quirks.py, and in
    # kvmodel.invariants): registering the record adds them
    quirks: tuple[Any, ...] = ()
    revisions: tuple[Any, ...] = ()
    invariants: tuple[tuple[Any, ...], tuple[Any, ...]] | None = None
    # how two adjacent steps of the trace format combine into one, for the trace minimizer
    # (``kvmodel.shrink.one_minimal``'s ``merge``): ``((op, args), (op, args)) -> (op, args) | None``
    merge_steps: Callable[[tuple[str, Any], tuple[str, Any]], tuple[str, Any] | None] | None = attrs.field(
        default=None, converter=_part
    )
    # the events are the Store/Remove stream a router consumes (``kvmodel show`` adds the router's view)
    router_stream: bool = False
    # invariant mode (``kvmodel.invariant_mode``): ``observer(config)`` reads an implementation's
    # observations as the component's invariants read the model's steps (None: no invariant mode)
    observer: Callable[[dict[str, Any]], Any] | None = attrs.field(default=None, converter=_part)

    # -- what the engines ask
    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def make_system(self, config: dict[str, Any] | None = None, quirks: Iterable[str] | None = None) -> System:
        if self.system is None:
            from kvmodel.model.errors import InvalidInput

            raise InvalidInput(f"{self.name} has no executable system (it is checked by conformance only)")
        return self.system(config, quirks)

    def options_for(self, command: str) -> tuple[Option, ...]:
        return tuple(o for o in self.options if command in o.commands)

    def explore_space(self, world: World) -> Space:
        assert self.space is not None, self.name
        return self.space(**dict(world.space))

    def api_space(self) -> Space:
        """The workload world of the differential API."""
        assert self.space is not None and self.api_world is not None, self.name
        return self.space(**dict(self.api_world))

    def workload_ops(self) -> tuple[Any, ...]:
        """The operations the workload generator draws besides its moves: ``api_ops`` and the
        queries (:mod:`kvmodel.workloads`)."""
        return (*(self.api_ops() if self.api_ops is not None else ()), *map(workloads.const, self.queries))

    def harnesses(self) -> tuple[type[Harness], ...]:
        return tuple(resolve(self.vectors) or ())

    def seeded_mutants(self) -> tuple[Mutant, ...]:
        return tuple(resolve(self.mutants) or ())

    def spec_universe(self, world: World) -> dict[str, Any]:
        """The Z3 universe that searches the same bounded system as the explorer's ``world``."""
        assert self.universe is not None, self.name
        return self.universe(world)

    def check_universe(self) -> dict[str, Any]:
        """The Z3 universe of ``kvmodel check``'s per-quirk BMC."""
        if self.profile.z3_universe is not None:
            return dict(self.profile.z3_universe)
        return self.spec_universe(self.profile.explore)

    def modelled_quirks(self, quirks: Iterable[str]) -> frozenset[str]:
        """``quirks`` restricted to what the spec's world reaches."""
        return frozenset(quirks) - self.spec_skips
