"""How far a component travels down the stack: the route of the ``component`` argument of an
entry point, measured by running it.

A route is the package's functions that receive the component — its record, or its name or
alias as a string — as an argument, called (directly or not) from the entry point, each counted
the first time it is called, in call order. Its *visits* are the runs of consecutive functions
of one module; its *returns* are the visits to a module the route had already left (visits minus
distinct modules). ``python tools/routes.py`` prints both routes of issue 62:

* ``hypothesis``: ``HypothesisEngine.run`` on the default component's (the KV manager's) ideal
  case (5 examples);
* ``check_implementation``: ``kvmodel.api.check_implementation`` of the model's own adapter
  (3 workloads).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any


def _folders() -> tuple[str, ...]:
    """The installed package's folders (``kvmodel``, and ``model``, ``invariants``, ``specs``)."""
    import kvmodel
    import kvmodel.invariants
    import kvmodel.model
    import kvmodel.specs

    return tuple(
        str(Path(m.__file__ or "").parent) + "/" for m in (kvmodel, kvmodel.model, kvmodel.invariants, kvmodel.specs)
    )


def route(entry: Callable[[], Any], component: Any) -> list[tuple[str, str]]:
    """(module file, function) of each package function that received ``component`` (the record or
    any of its names) as an argument while ``entry`` ran, in the order first called."""
    names = set(component.names)
    package = _folders()
    top = str(Path(package[0]).parent) + "/"
    seen: dict[tuple[str, str], None] = {}

    def receives(frame: FrameType) -> bool:
        code = frame.f_code
        n = code.co_argcount + code.co_kwonlyargcount
        for v in (frame.f_locals.get(a) for a in code.co_varnames[:n]):
            if v is component or (isinstance(v, str) and v in names):
                return True
        return False

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        f = frame.f_code.co_filename
        if f.startswith(package) and receives(frame):
            seen.setdefault((f.removeprefix(top), frame.f_code.co_qualname), None)

    sys.setprofile(profile)
    try:
        entry()
    finally:
        sys.setprofile(None)
    return list(seen)


def figures(steps: list[tuple[str, str]]) -> dict[str, Any]:
    visits: list[str] = []
    for module, _ in steps:
        if not visits or visits[-1] != module:
            visits.append(module)
    return {
        "modules": len(set(visits)),
        "visits": len(visits),
        "returns": len(visits) - len(set(visits)),
        "route": visits,
    }


def main() -> int:
    import tempfile

    from kvmodel import components
    from kvmodel.api import check_implementation
    from kvmodel.engines import Budget, Case
    from kvmodel.engines.hypothesis import HypothesisEngine

    c = components.default()  # the mocker's KV manager
    with tempfile.TemporaryDirectory() as out:
        budget = Budget(max_examples=5, steps=5, out_dir=Path(out))
        hyp = route(lambda: HypothesisEngine().run(c, Case(c.name, "ideal"), budget), c)
    from kvmodel.api import ModelAdapter

    adapter = ModelAdapter(c.name)  # the implementation checked: built before, not part of the route
    api = route(lambda: check_implementation(adapter, c.name, workloads=3, coverage=False), c)
    for name, r in (("HypothesisEngine.run", hyp), ("check_implementation", api)):
        f = figures(r)
        print(f"{name}: {f['modules']} modules, {f['visits']} visits, {f['returns']} returns")
        print("  " + " -> ".join(m.removesuffix(".py").removesuffix("/__init__") for m in f["route"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
