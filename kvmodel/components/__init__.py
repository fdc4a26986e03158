"""The component registry: every modelled component, in a stable order, by name or alias.

``get(name_or_alias)`` returns a :class:`~kvmodel.components.base.Component`; ``registered()``
iterates them in registration order (the built-in ones first, in the order below). A new
component is one package under ``kvmodel/components/`` (its record and its engine glue) plus its
model, invariants and spec files, and one line in ``_BUILTIN``; ``register`` adds one at run time
(the test suite's toy component does).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator

from kvmodel import invariants
from kvmodel.components.base import EXPLORE, SPEC, CheckProfile, Component, ConformTarget, Option, Ref, World
from kvmodel.model import quirks
from kvmodel.model.errors import InvalidInput

__all__ = [
    "EXPLORE",
    "SPEC",
    "CheckProfile",
    "Component",
    "ConformTarget",
    "Option",
    "Ref",
    "UnknownComponent",
    "World",
    "default",
    "get",
    "names",
    "of",
    "register",
    "registered",
    "target",
    "targets",
    "unregister",
    "with_",
]

# The built-in components' packages, in the order every listing uses.
_BUILTIN = (
    "kv_manager",
    "lru",
    "registry",
    "router",
    "g1_native",
    "g1_kvbm",
    "mocker_scheduler",
    "sglang_cache",
    "publisher",
)

_REGISTRY: dict[str, Component] = {}
_ALIASES: dict[str, str] = {}
_loaded = False


class UnknownComponent(InvalidInput, ValueError):
    """A name that is neither a registered component nor an alias of one."""


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for pkg in _BUILTIN:
        mod = importlib.import_module(f"kvmodel.components.{pkg}")
        for c in mod.COMPONENTS:
            register(c)


def register(c: Component) -> Component:
    """Add a component (its name and aliases must be new)."""
    _load()
    for n in c.names:
        if n in _REGISTRY or n in _ALIASES:
            raise ValueError(f"component name {n!r} is taken")
    if c.quirks or c.revisions:
        quirks.register(c.quirks, c.revisions)
    if c.invariants is not None:
        invariants.register(*c.invariants)
    _REGISTRY[c.name] = c
    for a in c.aliases:
        _ALIASES[a] = c.name
    return c


def unregister(name: str) -> None:
    """Remove a component registered at run time."""
    c = _REGISTRY.pop(name)
    for a in c.aliases:
        _ALIASES.pop(a, None)
    if c.quirks or c.revisions:
        quirks.unregister(c.name)
    if c.invariants is not None:
        invariants.unregister(c.name)


def registered() -> tuple[Component, ...]:
    _load()
    return tuple(_REGISTRY.values())


def with_(has: Callable[[Component], object]) -> tuple[Component, ...]:
    """The registered components for which ``has`` is true, in order."""
    return tuple(c for c in registered() if has(c))


def names(has: Callable[[Component], object] | None = None) -> tuple[str, ...]:
    return tuple(c.name for c in (registered() if has is None else with_(has)))


def default() -> Component:
    """The component commands and API calls use when none is named: the first registered (the
    mocker's KV manager)."""
    return registered()[0]


def get(name: str, has: Callable[[Component], object] | None = None, what: str = "component") -> Component:
    """The component called ``name`` (or an alias); :class:`UnknownComponent` names the known
    ones (those for which ``has`` is true, when given)."""
    _load()
    c = _REGISTRY.get(_ALIASES.get(name, name))
    if c is None or (has is not None and not has(c)):
        known = ", ".join(names(has))
        raise UnknownComponent(f"unknown {what} {name!r} (known: {known})")
    return c


def of(c: Component | str, has: Callable[[Component], object] | None = None, what: str = "component") -> Component:
    """The component itself, or the one a name or alias names (:func:`get`): what the package's
    entry points call once, so that the calls below them pass the record, not its name."""
    if isinstance(c, Component) and (has is None or has(c)):
        return c
    return get(c if isinstance(c, str) else c.name, has, what)


def targets() -> Iterator[tuple[Component, ConformTarget]]:
    """Every conformance target, with its component."""
    for c in registered():
        for t in c.conform:
            yield c, t


def target(name: str) -> tuple[Component, ConformTarget]:
    for c, t in targets():
        if t.name == name:
            return c, t
    known = ", ".join(t.name for _, t in targets())
    raise UnknownComponent(f"unknown target {name!r} (known: {known})")
