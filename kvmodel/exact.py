"""The comparison rule of every conformance check: JSON values, compared by type and value.

An implementation's answer (its returns, rejection, events, state) first goes through a JSON round
trip (:func:`as_json`): what JSON cannot hold — a set, a ``MagicMock``, ``unittest.mock.ANY``, NaN,
an object — is *malformed*, never compared. The model's own observation goes through the same round
trip (its tuples become lists). Two JSON values are then the same (:func:`same`) when they have the
same JSON type and the same value: ``true`` is not ``1``, ``2.0`` is not ``2``, ``"1"`` is not
``1``; objects are equal whatever their key order; arrays element by element, in order. Python's
``==`` is never the rule: it says ``True == 1 == 1.0`` and ``ANY == anything``.
"""

from __future__ import annotations

import json
from typing import Any


class NotJSON(ValueError):
    """A value that is not JSON (its message says what was found)."""


def as_json(x: Any) -> Any:
    """``x`` as the JSON value it stands for (tuples become lists; object keys must be strings,
    or integers, floats, booleans or ``None``, which JSON writes as strings), or :class:`NotJSON`."""
    try:
        return json.loads(json.dumps(x, allow_nan=False))
    except (TypeError, ValueError, RecursionError, OverflowError) as e:
        raise NotJSON(f"not a JSON value ({type(e).__name__}: {str(e)[:160]})") from None


def same(a: Any, b: Any) -> bool:
    """Whether two JSON values (as :func:`as_json` gives them) are the same by type and value."""
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is dict:
        return a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if ta is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def key(x: Any) -> str:
    """A JSON value as a canonical text: equal texts for values that are :func:`same` (for use as a
    dictionary key: ``True`` and ``1`` hash alike in Python, their keys do not)."""
    return json.dumps(x, sort_keys=True, separators=(",", ":"), allow_nan=False)


def printable(text: Any, limit: int = 120) -> str:
    """A name an implementation chose (its adapter's ``name``, a harness child's ``hello``) made
    safe to print: a string, every control character (newlines, escapes that would move the
    cursor or forge a report line) shown as its escape, at most ``limit`` characters."""
    s = text if isinstance(text, str) else repr(text)
    out = []
    for ch in s[: limit * 2]:
        out.append(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii"))
    t = "".join(out)
    return t if len(t) <= limit else t[: limit - 3] + "..."
