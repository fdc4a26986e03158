"""What an adapter must know about a component, read from the model's code: the rejections it can
report (:func:`error_catalogue`) and, per operation, arguments, return encoding and events
(:func:`contract`, rendered into ``docs/contracts.md`` by ``tools/gen_contracts.py``).

The rejections are found by reading the model's modules (``raise Error(...)``): a class with a
fixed ``id`` contributes ``type name -> id``; a panic whose id is its message (``NativePanic``,
``KvbmPanic``) contributes ``message -> message`` for every message literal it is raised with.
Either side of an entry may be returned as ``error``; so may the real code's full message, the id
followed by the runtime data Rust appends (:func:`kvmodel.api.same_error`).
"""

from __future__ import annotations

import ast
import importlib
import inspect
from functools import cache
from typing import Any

from kvmodel.model import errors

# the model modules whose raises a component's operations reach
MODULES: dict[str, tuple[str, ...]] = {
    "kv_manager": ("kv_manager", "blocks", "lru"),
    "lru_evictor_wallclock": ("lru",),
    "lru_evictor_counter": ("lru",),
    "kvbm_block_registry": ("registry",),
    "g1_native": ("g1.facade", "g1.native", "g1.pool", "g1.sequence", "blocks"),
    "g1_kvbm": ("g1.facade", "g1.kvbm", "g1.sequence", "blocks"),
    "router": ("router",),
}


def _error_class(module: Any, name: str) -> type[errors.ModelError] | None:
    cls = getattr(module, name, None) or getattr(errors, name, None)
    return cls if isinstance(cls, type) and issubclass(cls, errors.ModelError) else None


def _per_message(cls: type) -> bool:
    return issubclass(cls, errors.NativePanic)


@cache
def _raised(modname: str) -> tuple[tuple[str, str], ...]:
    """(name, id) of every rejection ``kvmodel.model.MODNAME`` raises."""
    module = importlib.import_module(f"kvmodel.model.{modname}")
    tree = ast.parse(inspect.getsource(module))
    out: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        cls = _error_class(module, node.func.id)
        if cls is None or cls is errors.ModelError:
            continue
        if not _per_message(cls):
            out.add((cls.__name__, cls.id))
            continue
        first = node.args[0] if node.args else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            out.add((first.value, first.value))
        elif first is not None:  # a message chosen at run time: every literal it can be
            for sub in ast.walk(first):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                    out.add((sub.value, sub.value))
    # the messages a module chooses by name (``what = "..."; raise NativePanic(what)``)
    for extra in getattr(module, "PANIC_MESSAGES", ()):
        out.add((extra, extra))
    return tuple(sorted(out))


def error_catalogue(component: str | None = None) -> dict[str, str]:
    """Rejection name -> id for ``component`` (all components when ``None``); ``InvalidInput`` is
    in every catalogue (arguments the real code's types would not admit)."""
    comps = list(MODULES) if component is None else [component]
    out = {"InvalidInput": errors.InvalidInput.id}
    for c in comps:
        for mod in MODULES.get(c, ()):
            out.update(dict(_raised(mod)))
    return dict(sorted(out.items()))
