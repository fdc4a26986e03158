"""The notation's small expression and statement language, for what Rust tests write as code.

Signals given as ``"S.take_creation_signal()"`` or ``"S.prepare_allocation(256)"``, and loop
bodies such as ``"signals = S.generate(); process each; if S.generated_tokens <
S.max_output_tokens: S.commit_allocation(S.len())"``, are read here:

* an expression is an integer, ``null``, a name bound earlier in the body, or a chain on a named
  object: ``S.attr`` (a field or a no-argument accessor) or ``S.method(arg, ...)``;
* a statement is ``name = expression``, ``process each`` (every signal of the last value, in
  order, through the component's ``process``), ``if A < B: statement`` (``<``, ``<=``, ``>``,
  ``>=``, ``==``, ``!=``), or an expression evaluated for its effect;
* statements are separated by ``;``.

Only the methods a component lists are callable (for sequences: the real ``ActiveSequence``
API), so a vector cannot reach anything else.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kvmodel.vectors.notation import Uninterpretable, int_of

SEQUENCE_METHODS = frozenset(
    {
        "take_creation_signal",
        "reset_with_signal",
        "prepare_allocation",
        "commit_allocation",
        "generate",
        "push",
        "pop",
        "free_signal",
        "promote_computed_tail",
        "len",
        "generated_tokens",
        "max_output_tokens",
        "num_input_tokens",
        "num_allocated_tokens",
        "already_generated_tokens",
        "block_size",
        "unique_blocks",
    }
)


def _split(text: str, sep: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch in "([" and 1) or 0
        depth -= (ch in ")]" and 1) or 0
        if ch == sep and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [x for x in (o.strip() for o in out) if x]


class Script:
    """Evaluate expressions and statements against named objects."""

    def __init__(self, objects: dict[str, Any], process: Callable[[Any], Any], methods: frozenset[str]) -> None:
        self.objects = objects
        self.process = process
        self.methods = methods
        self.env: dict[str, Any] = {}
        self.last: Any = None

    def eval(self, text: str) -> Any:
        t = text.strip()
        if int_of(t) is not None:
            return int_of(t)
        if t in ("null", "None"):
            return None
        if t in self.env:
            return self.env[t]
        m = re.fullmatch(r"([A-Za-z_]\w*)\.(\w+)(?:\((.*)\))?", t)
        if not m:
            raise Uninterpretable(f"cannot evaluate {text!r}")
        name, attr, arg = m.group(1), m.group(2), m.group(3)
        if name not in self.objects:
            raise Uninterpretable(f"{text!r}: no object named {name!r}")
        if attr not in self.methods:
            raise Uninterpretable(f"{text!r}: {attr!r} is not an operation the notation allows")
        obj = self.objects[name]
        if attr == "len":
            return len(obj)
        if attr == "unique_blocks":
            return list(getattr(obj, "unique", getattr(obj, "unique_blocks", [])))
        target = getattr(obj, attr, None)
        if target is None:
            raise Uninterpretable(f"{text!r}: {name} has no {attr}")
        args = [self.eval(a) for a in _split(arg, ",")] if arg else []
        return target(*args) if callable(target) else target

    def cond(self, text: str) -> bool:
        for op in ("<=", ">=", "==", "!=", "<", ">"):
            if op in text:
                a, b = text.split(op, 1)
                x, y = self.eval(a), self.eval(b)
                return bool({"<=": x <= y, ">=": x >= y, "==": x == y, "!=": x != y, "<": x < y, ">": x > y}[op])
        raise Uninterpretable(f"cannot read the condition {text!r}")

    def run(self, text: str) -> None:
        for stmt in _split(text, ";"):
            self.statement(stmt)

    def statement(self, stmt: str) -> None:
        m = re.fullmatch(r"if\s+(.+?):\s*(.+)", stmt)
        if m:
            if self.cond(m.group(1)):
                self.statement(m.group(2))
            return
        if re.fullmatch(r"process\s+(each|all|them|each signal|every signal)", stmt):
            sigs = self.last if isinstance(self.last, list) else [self.last]
            for s in sigs:
                if s is not None:
                    self.process(s)
            return
        m = re.fullmatch(r"([A-Za-z_]\w*)\s*=\s*(.+)", stmt)
        if m and "==" not in stmt:
            self.env[m.group(1)] = self.last = self.eval(m.group(2))
            return
        self.last = self.eval(stmt)
