"""Seeded bugs: one-idea changes to the ideal model, to measure what the checkers catch.

A :class:`Mutant` is a textual edit of one model module (``old`` must occur exactly once, and
becomes ``new``), the way mutation-testing tools make them. :func:`applied` compiles the edited
module and, for the duration of a ``with`` block, swaps the edited functions into the live
classes (and module-level functions), so every engine — which builds the ordinary model classes
— runs the mutant. Names of classes stay bound to the originals, so ``isinstance`` still works.
"""

from __future__ import annotations

import importlib
import inspect
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import attrs


@attrs.frozen
class Mutant:
    name: str
    component: str
    module: str  # dotted module name of the model file it edits
    old: str
    new: str
    idea: str  # what a real engineer would have got wrong

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "component": self.component, "module": self.module, "idea": self.idea}

    def diff(self) -> str:
        return "\n".join(
            ["- " + line for line in self.old.splitlines()] + ["+ " + line for line in self.new.splitlines()]
        )


class MutantError(Exception):
    """A mutant whose edit does not apply (its ``old`` text is missing or ambiguous)."""


def _edited_namespace(m: Mutant) -> tuple[types.ModuleType, dict[str, Any]]:
    mod = importlib.import_module(m.module)
    src = inspect.getsource(mod)
    n = src.count(m.old)
    if n != 1:
        raise MutantError(f"mutant {m.name}: the edited text occurs {n} times in {m.module} (must be exactly once)")
    ns: dict[str, Any] = {"__name__": f"{m.module}__mutant_{m.name}"}
    try:
        code = compile(src.replace(m.old, m.new), f"<mutant {m.name}>", "exec")
    except SyntaxError as e:
        raise MutantError(f"mutant {m.name}: the edited {m.module} does not compile: {e}") from None
    exec(code, ns)
    return mod, ns


@contextmanager
def applied(m: Mutant) -> Iterator[None]:
    """Run the body with mutant ``m`` in force; everything is restored afterwards."""
    mod, ns = _edited_namespace(m)
    fname = f"<mutant {m.name}>"
    new_classes = {k: v for k, v in ns.items() if isinstance(v, type)}
    new_functions = {k: v for k, v in ns.items() if inspect.isfunction(v) and v.__code__.co_filename == fname}
    # The edited functions' globals are ``ns``: point its names back at the live module's
    # classes and objects, so that they build and recognise the ordinary instances.
    for k, v in vars(mod).items():
        if k in ns and k not in new_functions:
            ns[k] = v
    saved: list[tuple[Any, str, Any]] = []
    try:
        for k, fn in new_functions.items():
            if inspect.isfunction(getattr(mod, k, None)):
                saved.append((mod, k, getattr(mod, k)))
                setattr(mod, k, fn)
        for cname, new_cls in new_classes.items():
            cls = getattr(mod, cname, None)
            if not isinstance(cls, type) or cls.__module__ != mod.__name__:
                continue
            for attr, val in vars(new_cls).items():
                target: Any = val.fget if isinstance(val, property) else val
                if inspect.isfunction(target) and target.__code__.co_filename == fname and attr in vars(cls):
                    saved.append((cls, attr, vars(cls)[attr]))
                    setattr(cls, attr, val)
        yield
    finally:
        for owner, attr, orig in reversed(saved):
            setattr(owner, attr, orig)
