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
import json
from functools import cache
from typing import Any

import attrs

from kvmodel.model import errors


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


def names() -> list[str]:
    """The components with an adapter contract, in registry order."""
    from kvmodel import components

    return list(components.names(lambda c: c.contract))


def _record(component: str) -> tuple[dict[str, tuple[dict[str, str], str]], str, tuple[str, ...]]:
    from kvmodel import components

    c = components.get(component)
    return c.contract() if c.contract is not None else ({}, "", ())


def operations(component: str) -> dict[str, tuple[dict[str, str], str]]:
    """Operation -> (arguments: name -> type, ``?`` marking an optional one; what ``returns`` holds)."""
    return _record(component)[0]


def events(component: str) -> str:
    """The component's events and how they are compared."""
    return _record(component)[1]


def error_catalogue(component: str | None = None) -> dict[str, str]:
    """Rejection name -> id for ``component`` (all components when ``None``); ``InvalidInput`` is
    in every catalogue (arguments the real code's types would not admit)."""
    comps = names() if component is None else [component]
    out = {"InvalidInput": errors.InvalidInput.id}
    for c in comps:
        for mod in _record(c)[2]:
            out.update(dict(_raised(mod)))
    return dict(sorted(out.items()))


VALIDATION = """\
Workloads contain only inputs the real code's types admit: every name refers to a value that
exists and has the right kind, every integer is in range, every key is known. An operation the
model would reject as `InvalidInput` is never generated, and a shrinking candidate in which one
appears (a step removed that bound a name) is skipped. An adapter therefore need not validate
its inputs before acting on them: it may act, and report what its code does. Unknown argument
keys and unknown configuration keys are `InvalidInput` in the model (a misspelled key never
silently takes a default)."""


def contract(component: str) -> dict[str, Any]:
    """The adapter's contract for ``component``: operations (arguments, returns), events, errors."""
    return {
        "operations": {op: {"args": a, "returns": r} for op, (a, r) in operations(component).items()},
        "events": events(component),
        "errors": error_catalogue(component),
    }


def _code(text: str) -> str:
    """Inline code that may itself hold backticks."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def markdown() -> str:
    """``docs/contracts.md``: every component's adapter contract (tools/gen_contracts.py)."""
    from kvmodel import components

    out = [
        "# Adapter contracts",
        "",
        "Generated from the code by `python tools/gen_contracts.py` (a test keeps it current): what an",
        "adapter receives and must answer for each component checked by `kvmodel.api.check_implementation`",
        "and `kvmodel conform --target exec` (`docs/api.md`, `docs/harness.md`).",
        "",
        'An answer is `{"returns": value, "events": [...]}` or `{"error": name, "events": [...]}`.',
        "`error` may be any name or id of the component's error table, or the real code's full message:",
        "an id followed by the runtime data Rust appends (`Missing active block for promotion: PartialBlock(p0)`",
        "matches the id `Missing active block for promotion`; the next character after the id must be one of",
        "`: (,.`, a space or a newline). Types: `u32`, `u64`, `usize` are non-negative integers below 2^32,",
        "2^64, 2^64; `u63` below 2^63; `name` a non-empty string of at most 200 characters; `?` marks an",
        "optional argument.",
        "",
        "## Validation order",
        "",
        VALIDATION,
        "",
    ]
    for name in names():
        c = components.get(name)
        sysm = c.make_system({}, ())
        out += [f"## `{name}` — {c.title}", "", f"Real code: {c.real_code}. Default configuration: "]
        out[-1] += "`" + json.dumps(dict(sysm.config), sort_keys=True) + "` (unknown keys are errors)."
        assert c.api_space is not None
        sp: Any = c.api_space()
        fields = ", ".join(f"{f.name}={getattr(sp, f.name)!r}" for f in attrs.fields(type(sp)))
        doc = (type(sp).__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        out += ["", f"Workload world (`space=`; `kvmodel.api.workload_space({name!r}, **fields)`): "]
        out[-1] += f"`{type(sp).__name__}({fields})` — {' '.join(doc.split())}"
        out += ["", "| operation | arguments | returns |", "|---|---|---|"]
        for op, (args, ret) in operations(name).items():
            a = ", ".join(f"`{k}`: {v}" for k, v in args.items()) or "none"
            out.append(f"| `{op}` | {a.replace('|', '&#124;')} | {ret.replace('|', '&#124;')} |")
        out += ["", f"**Events**: {events(name)}", "", "**Errors** (name → id):", ""]
        for k, v in error_catalogue(name).items():
            out.append(f"* {_code(k)}" + ("" if k == v else f" → {_code(v)}"))
        out.append("")
    return "\n".join(out)
