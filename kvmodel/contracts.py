"""What an adapter must know about a component, read from the model's code: the rejections it can
report (:func:`error_catalogue`) and, per operation, arguments, return encoding and events
(:func:`contract`, rendered into ``docs/contracts.md`` by ``tools/gen_contracts.py``).

The operations' arguments and returns are the action classes' own declarations
(:class:`kvmodel.actions.Action`: ``ARGS`` and ``TYPES``, ``RETURNS``, ``MEANS``), so what the
contract promises is what the model decodes and answers; a component's ``contract`` module holds
what is not one operation's: its events, the model modules it raises from, and notes.

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
def _raised_typed(modname: str) -> tuple[tuple[str, str, str], ...]:
    """``(name, id, type)`` of every rejection the module raises: a fixed-id class gives its name
    and id; a panic whose id is its message gives ``(message, message, panic type)``."""
    module = importlib.import_module(f"kvmodel.model.{modname}")
    tree = ast.parse(inspect.getsource(module))
    out: set[tuple[str, str, str]] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        cls = _error_class(module, node.func.id)
        if cls is None or cls is errors.ModelError:
            continue
        if not _per_message(cls):
            out.add((cls.__name__, cls.id, cls.__name__))
            continue
        first = node.args[0] if node.args else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            out.add((first.value, first.value, cls.__name__))
        elif first is not None:  # a message chosen at run time: every literal it can be
            for sub in ast.walk(first):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                    out.add((sub.value, sub.value, cls.__name__))
    # the messages a module chooses by name (``what = "..."; raise NativePanic(what)``)
    panic = getattr(module, "PANIC_TYPE", errors.NativePanic).__name__
    for extra in getattr(module, "PANIC_MESSAGES", ()):
        out.add((extra, extra, panic))
    return tuple(sorted(out))


def _raised(modname: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted({(k, i) for k, i, _ in _raised_typed(modname)}))


def panic_types(component: str) -> dict[str, str]:
    """Panic message -> the panic type that raises it (``NativePanic``, ``KvbmPanic``, ...)."""
    out: dict[str, str] = {}
    for mod in modules(component):
        out.update({k: t for k, i, t in _raised_typed(mod) if k == i and k != t})
    return out


def names() -> list[str]:
    """The components with an adapter contract, in registry order."""
    from kvmodel import components

    return list(components.names(lambda c: c.contract))


def _record(component: str) -> tuple[Any, ...]:
    """``(events, model modules, notes)`` of the component's ``contract`` module."""
    from kvmodel import components
    from kvmodel.components.base import resolve

    c = components.get(component)
    return tuple(resolve(c.contract)) if c.contract is not None else ("", (), ())


def _actions(component: str) -> tuple[Any, ...]:
    """The component's action classes, in the order of its operations."""
    from kvmodel import components

    if components.get(component).contract is None:
        return ()
    return tuple(components.get(component).make_system({}, ()).ACTIONS.classes)  # type: ignore[attr-defined]


def modules(component: str) -> tuple[str, ...]:
    """The model modules (``kvmodel.model.*``) whose raises the component's operations reach."""
    return tuple(_record(component)[1])


def shapes(component: str) -> dict[str, str]:
    """Operation -> the shape of what ``returns`` holds (:func:`conforms` reads it)."""
    return {c.op: c.RETURNS for c in _actions(component)}


def notes(component: str) -> tuple[str, ...]:
    """The component's contract notes: encodings, operation semantics, the world's preconditions,
    the state after a panic (markdown paragraphs)."""
    return tuple(_record(component)[2])


def preconditions(component: str) -> dict[str, str]:
    """Operation -> what the workload generator ensures before drawing it (the guard of the
    component's workload world: the scheduler's own preconditions and the world's bounds), read
    from the guards' docstrings; operations without a guard are drawn in any state."""
    from kvmodel import components

    c = components.get(component)
    if c.api_world is None:
        return {}
    guards = getattr(type(c.api_space()), "GUARDS", {})
    out = {}
    for action, guard in guards.items():
        doc = " ".join((guard.__doc__ or "").split())
        if doc:  # an undocumented guard holds in every state (``_always``)
            out[action.op] = doc
    return out


# --- return shapes -----------------------------------------------------------------------------
# A small grammar, one string per operation: ``null``, ``boolean``, ``usize``, ``u32``, ``u64``,
# ``name`` (a non-empty string), ``string``, ``Ready(n)`` (the string ``"Ready(<usize>)"``), a quoted literal
# string (``"Ready"``), ``[S]`` (a list of S), ``{k: S, ...}`` (an object with exactly these keys),
# ``S | S``, and parentheses.

_ATOMS = {"null", "boolean", "usize", "u32", "u64", "name", "string", "Ready(n)"}


def _tokens(shape: str) -> list[str]:
    import re

    out = re.findall(r'Ready\(n\)|"[^"]*"|[A-Za-z_][A-Za-z0-9_]*|[\[\]{}(),:|]', shape)
    if "".join(out) != "".join(shape.split()):
        raise ValueError(f"unreadable shape {shape!r}")
    return out


def _parse(tokens: list[str], i: int) -> tuple[Any, int]:
    alts = []
    while True:
        t, i = _term(tokens, i)
        alts.append(t)
        if i < len(tokens) and tokens[i] == "|":
            i += 1
            continue
        return (("alt", tuple(alts)) if len(alts) > 1 else alts[0]), i


def _term(tokens: list[str], i: int) -> tuple[Any, int]:
    t = tokens[i]
    if t == "(":
        inner, i = _parse(tokens, i + 1)
        return inner, i + 1
    if t == "[":
        inner, i = _parse(tokens, i + 1)
        return ("list", inner), i + 1
    if t == "{":
        fields: dict[str, Any] = {}
        i += 1
        while tokens[i] != "}":
            key = tokens[i]
            sub, i = _parse(tokens, i + 2)
            fields[key] = sub
            if tokens[i] == ",":
                i += 1
        return ("object", fields), i + 1
    if t.startswith('"'):
        return ("literal", t[1:-1]), i + 1
    if t in _ATOMS:
        return ("atom", t), i + 1
    raise ValueError(f"unknown shape word {t!r}")


def parse_shape(shape: str) -> Any:
    tokens = _tokens(shape)
    tree, i = _parse(tokens, 0)
    if i != len(tokens):
        raise ValueError(f"trailing {tokens[i:]!r} in shape {shape!r}")
    return tree


def _fits(tree: Any, v: Any) -> bool:
    import re

    kind, arg = tree
    if kind == "alt":
        return any(_fits(t, v) for t in arg)
    if kind == "list":
        return isinstance(v, list) and all(_fits(arg, x) for x in v)
    if kind == "object":
        return isinstance(v, dict) and set(v) == set(arg) and all(_fits(arg[k], v[k]) for k in arg)
    if kind == "literal":
        return bool(v == arg)
    if arg == "null":
        return v is None
    if arg == "boolean":
        return isinstance(v, bool)
    if arg == "name":
        return isinstance(v, str) and v != ""
    if arg == "string":
        return isinstance(v, str)
    if arg == "Ready(n)":
        return isinstance(v, str) and re.fullmatch(r"Ready\(\d+\)", v) is not None
    bound = {"usize": 2**64, "u64": 2**64, "u32": 2**32}[arg]
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < bound


def conforms(shape: str, value: Any) -> bool:
    """Whether ``value`` (a decoded JSON answer) has the documented ``shape``."""
    return _fits(parse_shape(shape), value)


def operations(component: str) -> dict[str, tuple[dict[str, str], str]]:
    """Operation -> (arguments: name -> type, ``?`` marking an optional one; what ``returns`` holds)."""
    return {c.op: (c.contract_args(), c.MEANS) for c in _actions(component)}


def events(component: str) -> str:
    """The component's events and how they are compared."""
    return str(_record(component)[0])


def error_catalogue(component: str | None = None) -> dict[str, str]:
    """Rejection name -> id for ``component`` (all components when ``None``); ``InvalidInput`` is
    in every catalogue (arguments the real code's types would not admit)."""
    comps = names() if component is None else [component]
    out = {"InvalidInput": errors.InvalidInput.id}
    for c in comps:
        for mod in modules(c):
            out.update(dict(_raised(mod)))
    return dict(sorted(out.items()))


VALIDATION = """\
Workloads contain only inputs the real code's types admit: every name refers to a value that
exists and has the right kind, every integer is in range, every key is known. An operation the
model would reject as `InvalidInput` is never generated, and a shrinking candidate in which one
appears (a step removed that bound a name) is skipped. An adapter therefore need not validate
its inputs before acting on them: it may act, and report what its code does. Unknown argument
keys and unknown configuration keys are `InvalidInput` in the model (a misspelled key never
silently takes a default).

A generated workload ends at a step the compared model answers with a panic *that changed its
state* (a faithful revision's mutation before a panic: `kvmodel quirks`): Rust's engine task dies
there, so no real run goes on from that state, and none is asked of an adapter. A rejection that
changes nothing (every rejection of the ideal model) is an ordinary step, and the workload goes on."""


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
        assert c.api_world is not None
        sp: Any = c.api_space()
        fields = ", ".join(f"{f.name}={getattr(sp, f.name)!r}" for f in attrs.fields(type(sp)))
        doc = (type(sp).__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        out += ["", f"Workload world (`space=`; `kvmodel.api.workload_space({name!r}, **fields)`): "]
        out[-1] += f"`{type(sp).__name__}({fields})` — {' '.join(doc.split())}"
        shape = shapes(name)
        out += ["", "| operation | arguments | returns (shape) | what it means |", "|---|---|---|---|"]
        for op, (args, ret) in operations(name).items():
            a = ", ".join(f"`{k}`: {v}" for k, v in args.items()) or "none"
            sh = _code(shape[op]).replace("|", "&#124;") if op in shape else ""
            out.append(f"| `{op}` | {a.replace('|', '&#124;')} | {sh} | {ret.replace('|', '&#124;')} |")
        out += ["", f"**Events**: {events(name)}", ""]
        for para in notes(name):
            out += [para, ""]
        pre = preconditions(name)
        if pre:
            out += ["**The world's preconditions** (what a generated workload ensures before each operation;", ""]
            out[-2] += " an operation not listed is drawn in any state):"
            out[-1:] = [""]
            out += [f"* `{op}`: {doc}" for op, doc in pre.items()] + [""]
        out += ["**Errors** (name → id; an entry without a name is a panic whose id is its message,", ""]
        out[-2] += " raised as the type named after it):"
        panics = panic_types(name)
        for k, v in error_catalogue(name).items():
            kind = f" ({panics[k]})" if k in panics else ""
            out.append(f"* {_code(k)}" + ("" if k == v else f" → {_code(v)}") + kind)
        out.append("")
    return "\n".join(out)
