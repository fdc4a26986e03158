"""The notation of ``dynamo-kv-test-vectors/1``, implemented once for every component.

``docs/vectors.md`` is the grammar. In short, a vector is a constructor and steps; a step is an
``op`` with ``args``, what the Rust test asserts after it (``expect``, exact) and what the
semantics implies (``derived_not_asserted``). Expectation keys are *observations*: names of the
real structs' fields and accessors, resolved in a :class:`Namespace` that a component's harness
fills after every step, in these forms:

* a name or a path: ``num_active_blocks``, ``active_full[30].block_id``, ``events[0].Stored``,
  ``blocks[1].sequence_hash``, ``S.unique_blocks[0..2]``, map keys that are symbols
  (``active_full_refs[S.h[0]]``), accessors with an argument (``R.transferable_prompt_tokens(4)``);
  a name found nowhere at the top is looked up as a unique field anywhere below
  (``registration_dedup`` is ``block_manager.metrics.snapshot.registration_dedup``);
* suffixes on any observation: ``_len`` / ``_count`` (its length, or its value when it is a
  number), ``_empty`` / ``_is_empty`` / ``_nonempty``, ``_is_some`` / ``_is_none``, ``_some``,
  ``_contains_K`` (whether ``K`` is a key or member), ``_mod_N`` / ``_mod_block_size``,
  ``_unchanged`` (equal to its value before the step), and the forms whose meaning needs the
  expected value: ``_exact`` (equality of maps, not only the listed keys), ``_as_set``,
  ``_order``, ``_at_least`` / ``_at_most``, ``_in`` (the observed value, or each of its members,
  is one of the listed ones) and ``_contains`` (the listed members are all present);
* comparisons ``A == B``, ``A != B``, ``A < B``, ``A <= B``, ``A > B``, ``A >= B`` with a boolean
  expected value.

Expected values: objects match field by field (only the listed fields are asserted), lists
element by element, ``{"P": "name"}`` unifies a symbolic partial-block name with the model's one
to one, a string that reads as an observation or symbol (``"S.h[2]"``, ``"== active_full[10].
block_id"``) stands for its value, an integer matches a stored block given in full by its
``block_hash``. A key or value the runner cannot interpret is a failure naming it, never a pass.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

COMMENT_KEYS = frozenset({"note", "notes", "rule", "comment", "order_note", "why"})


class Mismatch(Exception):
    """The model's observation differs from the vector's expectation."""


class Uninterpretable(Exception):
    """A key, value or operation the notation does not define (names what it is)."""


def j(x: Any) -> str:
    s = json.dumps(x, sort_keys=True, default=str)
    return s if len(s) <= 200 else s[:197] + "..."


def int_of(x: Any) -> int | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, str) and re.fullmatch(r"-?\d+", x.strip()):
        return int(x)
    return None


def tokens(spec: Any) -> list[int]:
    """A token list: ``[1, 2, 3]``, ``"0..512"`` (a half-open range), ``"1..=4"`` (inclusive)."""
    if isinstance(spec, list):
        out = []
        for t in spec:
            v = int_of(t)
            if v is None:
                raise Uninterpretable(f"token {t!r} is not an integer")
            out.append(v)
        return out
    if isinstance(spec, str):
        m = re.fullmatch(r"\s*\(?\s*(\d+)\s*\.\.(=?)\s*(\d+)\s*\)?\s*(?:\.collect\(\))?\s*(?:\([^()]*\))?\s*", spec)
        if m:
            a, b = int(m.group(1)), int(m.group(3)) + (1 if m.group(2) else 0)
            if b - a > 1 << 16:
                raise Uninterpretable(f"token range {spec!r} is too long")
            return list(range(a, b))
    raise Uninterpretable(f"cannot read tokens {spec!r}")


# --------------------------------------------------------------------------- matching


_SIGNAL_KINDS = ("Use", "Destroy", "Deref", "Promote", "Store", "Remove", "Stored", "Removed")


class Matcher:
    """Structural matching with one-to-one unification of symbolic partial names."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.back: dict[str, str] = {}
        self.lenient = False  # derived_not_asserted: prose descriptions are not compared

    def unify(self, sym: str, actual: str, where: str) -> None:
        if sym in self.names:
            if self.names[sym] != actual:
                raise Mismatch(f"{where}: {sym!r} stands for {self.names[sym]!r}, got {actual!r}")
            return
        if actual in self.back:
            raise Mismatch(f"{where}: {actual!r} is already {self.back[actual]!r}, expected fresh {sym!r}")
        self.names[sym] = actual
        self.back[actual] = sym

    def match(self, exp: Any, act: Any, where: str, ns: Namespace | None = None) -> None:
        if isinstance(exp, dict) and len(exp) == 1 and "P" in exp and isinstance(act, dict) and "P" in act:
            self.unify(str(exp["P"]), str(act["P"]), where)
            return
        if isinstance(exp, dict) and len(exp) == 1 and "F" in exp and isinstance(act, dict) and "F" in act:
            self.match(exp["F"], act["F"], f"{where}.F", ns)
            return
        if isinstance(exp, dict) and len(exp) == 1 and isinstance(act, dict) and len(act) == 1:
            ((ek, ev),) = exp.items()
            ((ak, av),) = act.items()
            if ek in _SIGNAL_KINDS or ak in _SIGNAL_KINDS:
                if ek != ak:
                    raise Mismatch(f"{where}: expected {ek}, got {ak}")
                if isinstance(ev, dict) and isinstance(av, list):
                    self._descriptor(ev, av, f"{where}.{ek}")
                    return
                self.match(ev, av, f"{where}.{ek}", ns)
                return
        if isinstance(exp, dict):
            if not isinstance(act, dict):
                raise Mismatch(f"{where}: expected an object {j(exp)}, got {j(act)}")
            for k, v in exp.items():
                if k in COMMENT_KEYS or k.endswith("_note"):
                    continue
                key = self._key(k, act, ns)
                if key is not None:
                    self.match(v, act[key], f"{where}.{k}", ns)
                    continue
                sub = _NO
                if ns is not None:
                    # a path or derived form on a member (blocks_len, blocks[0].block_hash)
                    try:
                        sub = ns.relative(act).resolve(k)
                    except (Uninterpretable, Mismatch):
                        sub = _NO
                if sub is _NO:
                    raise Mismatch(f"{where}: missing {k!r} in {j(act)}")
                self.match(v, sub, f"{where}.{k}", ns)
            return
        if isinstance(exp, list):
            if not isinstance(act, list | tuple):
                raise Mismatch(f"{where}: expected a list {j(exp)}, got {j(act)}")
            if len(exp) != len(act):
                raise Mismatch(f"{where}: expected {j(exp)}, got {j(act)}")
            for i, (e, a) in enumerate(zip(exp, act, strict=True)):
                self.match(e, a, f"{where}[{i}]", ns)
            return
        if isinstance(exp, int) and not isinstance(exp, bool) and isinstance(act, list | tuple | set):
            # a count of what is listed ("lookup[0][200].workers": 2)
            self.match(exp, len(act), f"{where} (count)", ns)
            return
        if isinstance(exp, int) and not isinstance(exp, bool) and isinstance(act, dict) and "block_hash" in act:
            self.match(exp, act["block_hash"], f"{where}.block_hash", ns)
            return
        if isinstance(exp, str) and exp.startswith("== ") and ns is not None:
            ref = ns.resolve(exp[3:])
            if j(ref) != j(act):
                raise Mismatch(f"{where}: expected {exp[3:]} = {j(ref)}, got {j(act)}")
            return
        if isinstance(exp, str) and not isinstance(act, str) and int_of(exp) is None and ns is not None:
            # a symbolic value naming another observable ("S.h[2]", "events[0].blocks[1].block_hash")
            ref = _NO
            for text in (exp, re.sub(r"\s+\([^()]*\)\s*$", "", exp)):  # "S.h[1] (a FullBlock hash)"
                try:
                    ref = ns.resolve(text)
                    break
                except (Uninterpretable, Mismatch):
                    continue
            if isinstance(ref, dict) and len(ref) == 1 and "F" in ref and not isinstance(act, dict):
                ref = ref["F"]
            if ref is not _NO and not isinstance(ref, dict | list):
                if ref != act:
                    raise Mismatch(f"{where}: expected {exp} = {j(ref)}, got {j(act)}")
                return
        if isinstance(exp, str) and isinstance(act, str) and exp.startswith(("Ok(", "Err(")):
            # a Result: variant paths and the payload beyond what the vector names are not compared
            e, a = (re.sub(r"\b\w+::", "", x).replace(" ", "") for x in (exp, act))
            if a == e or a.startswith(e.rstrip(")")):
                return
            raise Mismatch(f"{where}: expected {exp}, got {act}")
        if isinstance(exp, str) and isinstance(act, int) and not isinstance(act, bool) and int_of(exp) is not None:
            exp = int_of(exp)
        if self.lenient and isinstance(exp, str) and not isinstance(act, str) and int_of(exp) is None:
            return
        if exp != act or (type(exp) is bool) != (type(act) is bool):
            raise Mismatch(f"{where}: expected {j(exp)}, got {j(act)}")

    @staticmethod
    def _key(k: str, act: dict[str, Any], ns: Namespace | None) -> str | None:
        if k in act:
            return k
        if ns is not None:
            try:
                v = ns.resolve(k)
            except (Uninterpretable, Mismatch):
                return None
            if isinstance(v, int | str) and not isinstance(v, bool) and str(v) in act:
                return str(v)
            if isinstance(v, dict):
                cand = ns.key_of(v)
                if cand is not None and cand in act:
                    return cand
        return None

    def _descriptor(self, desc: dict[str, Any], blocks: list[Any], where: str) -> None:
        for k, v in desc.items():
            if k == "num_blocks":
                self.match(v, len(blocks), f"{where}.num_blocks")
            elif m := re.fullmatch(r"block(\d+)_is_(partial|full)", k):
                i = int(m.group(1))
                if i >= len(blocks):
                    raise Mismatch(f"{where}: no block {i} in {j(blocks)}")
                is_kind = "P" in blocks[i] if m.group(2) == "partial" else "F" in blocks[i]
                self.match(v, is_kind, f"{where}.{k}")
            elif k in COMMENT_KEYS:
                continue
            else:
                raise Uninterpretable(f"{where}: unknown signal descriptor {k!r}")


_NO = object()


def length(x: Any) -> int:
    """``len()`` of an observation; an object with a ``len`` field (a Rust ``len()``) gives it."""
    if isinstance(x, dict) and "len" in x and isinstance(x["len"], int):
        return int(x["len"])
    if isinstance(x, int) and not isinstance(x, bool):
        return x
    if isinstance(x, dict | list | tuple | str | set | frozenset):
        return len(x)
    raise Uninterpretable(f"{j(x)} has no length")


# --------------------------------------------------------------------------- namespace

_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_:]*)|(?P<index>\[)|(?P<dot>\.)|(?P<call>\())")
_CMP = ((" == ", "=="), (" != ", "!="), (" <= ", "<="), (" >= ", ">="), (" < ", "<"), (" > ", ">"))
# suffixes that need the expected value to mean anything
_PREDICATES = ("_at_least", "_at_most", "_as_set", "_order", "_exact", "_contains", "_in", "_unchanged")


def _split_top(text: str, sep: str) -> list[str]:
    """Split at ``sep`` outside brackets and parentheses."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == sep and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def _matching(text: str, i: int, open_: str, close: str) -> int:
    depth = 0
    for k in range(i, len(text)):
        if text[k] == open_:
            depth += 1
        elif text[k] == close:
            depth -= 1
            if depth == 0:
                return k
    raise Uninterpretable(f"unbalanced {open_!r} in {text!r}")


class Namespace:
    """The observations after a step, resolved by the notation's paths and forms.

    ``values`` is a tree of JSON-like values (the step's results, the component's fields and
    accessors, named objects); ``before`` the same tree before the step (for ``_unchanged``);
    ``calls`` maps accessor names to functions of one argument (``transferable_prompt_tokens``);
    ``keys`` turns a structured key (a PLH) into the key string the observed maps use.
    """

    def __init__(
        self,
        values: dict[str, Any],
        block_size: int | None = None,
        *,
        before: dict[str, Any] | None = None,
        calls: dict[str, Callable[..., Any]] | None = None,
        key_of: Callable[[Any], str | None] | None = None,
        root: Any = _NO,
        history: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.values = values
        self.block_size = block_size
        self.before = before
        self.history = history or {}  # op -> the observations right after its last step
        self.calls = calls or {}
        self._key_of = key_of
        self.root = root  # a relative namespace: paths inside one observed value only

    def key_of(self, v: Any) -> str | None:
        return None if self._key_of is None else self._key_of(v)

    def _at(self, values: dict[str, Any]) -> Namespace:
        return Namespace(values, self.block_size, calls=self.calls, key_of=self._key_of, history=self.history)

    def relative(self, value: Any) -> Namespace:
        """Paths and derived forms inside ``value`` (an object being matched); symbols in
        expected values are still resolved in ``self``."""
        return Namespace({}, self.block_size, calls=self.calls, key_of=self._key_of, root=value)

    # -- resolution
    def resolve(self, path: str) -> Any:
        path = path.strip()
        if not path:
            raise Uninterpretable("an empty observation name")
        if self.root is not _NO:
            if isinstance(self.root, dict) and path in self.root:
                return self.root[path]
            for suffix, fn in _DERIVED:
                if path.endswith(suffix) and isinstance(self.root, dict) and path[: -len(suffix)] in self.root:
                    return fn(self, path, self.root[path[: -len(suffix)]])
            return self._path(path, self.root, top=False)
        if path in self.values:
            return self.values[path]
        m = re.fullmatch(r"(.+)_after_([A-Za-z_]\w*?)s?", path)
        if m and m.group(2) in self.history:
            # the observation right after the last step of that operation
            return self._at(self.history[m.group(2)]).resolve(m.group(1))
        if path.endswith("_before") and self.before is not None:
            return self._at(self.before).resolve(path[: -len("_before")])
        for suffix, fn in _DERIVED:
            if path.endswith(suffix) and len(path) > len(suffix):
                base = path[: -len(suffix)]
                try:
                    return fn(self, base, self.resolve(base))
                except Uninterpretable:
                    pass
        m = re.fullmatch(r"(.+?)_mod_(\d+|block_size)", path)
        if m:
            base = self.resolve(m.group(1))
            n = self.block_size if m.group(2) == "block_size" else int(m.group(2))
            if n is None or not isinstance(base, int):
                raise Uninterpretable(f"{path}: no block size or not a number")
            return base % n
        m = re.fullmatch(r"(.+)_contains_(.+)", path)
        if m:
            base = self.resolve(m.group(1))
            item_text = m.group(2)
            try:
                item = self._value(item_text)
            except (Uninterpretable, Mismatch):
                mm = re.fullmatch(r"[A-Za-z]+_(\d+)", item_text)  # lookup_contains_worker_0
                if not mm:
                    raise
                item = int(mm.group(1))
            return self._contains(base, item)
        try:
            return self._path(path, self.values, top=True)
        except Uninterpretable:
            hit = self._leaf(path)
            if hit is not _NO:
                return hit
            raise

    def _value(self, text: str) -> Any:
        """A literal (integer, null, true/false, a string) or an observation."""
        t = text.strip()
        if int_of(t) is not None:
            return int_of(t)
        if t in ("null", "None"):
            return None
        if t in ("true", "false"):
            return t == "true"
        if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
            return t[1:-1]
        return self.resolve(t)

    def _contains(self, base: Any, item: Any) -> bool:
        if isinstance(base, dict):
            return str(item) in base or (self.key_of(item) or "") in base
        if isinstance(base, list | tuple | set):
            return item in base or str(item) in [str(x) for x in base]
        raise Uninterpretable(f"{j(base)} has no members")

    def _leaf(self, name: str) -> Any:
        """A unique field ``name`` anywhere in the tree (``registration_dedup``)."""
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            return _NO
        found: dict[str, Any] = {}

        def walk(x: Any, depth: int) -> None:
            if depth > 6 or len(found) > 1:
                return
            if isinstance(x, dict):
                for k, v in x.items():
                    if k == name:
                        found.setdefault(j(v), v)
                    walk(v, depth + 1)

        for k, v in self.values.items():
            if k.startswith("_") or k in ("previous", "after_last_step"):
                continue
            walk(v, 0)
        return next(iter(found.values())) if len(found) == 1 else _NO

    def _path(self, path: str, root: Any, *, top: bool) -> Any:
        cur: Any = root
        i, first = 0, True
        n = len(path)
        while i < n:
            m = _TOKEN.match(path, i)
            if not m:
                raise Uninterpretable(f"cannot read {path!r} as a path")
            if m.group("name"):
                name = m.group("name")
                i = m.end()
                if i < n and path[i] == "(":
                    end = _matching(path, i, "(", ")")
                    arg = path[i + 1 : end]
                    cur = self._call(cur if not first else None, name, arg, path)
                    i = end + 1
                else:
                    cur = self._field(cur, name, path, first and top)
                first = False
            elif m.group("dot"):
                i = m.end()
            elif m.group("index"):
                start = m.start("index")
                end = _matching(path, start, "[", "]")
                cur = self._index(cur, path[start + 1 : end], path)
                i = end + 1
                first = False
            else:
                raise Uninterpretable(f"cannot read {path!r} as a path")
        return cur

    def _field(self, cur: Any, name: str, path: str, first: bool) -> Any:
        if isinstance(cur, dict) and name in cur:
            return cur[name]
        if not first and isinstance(cur, dict):
            for suffix, fn in _DERIVED:
                if name.endswith(suffix) and name[: -len(suffix)] in cur:
                    return fn(self, name, cur[name[: -len(suffix)]])
            mm = re.fullmatch(r"(.+?)_mod_(\d+)", name)
            if mm and mm.group(1) in cur and isinstance(cur[mm.group(1)], int):
                return cur[mm.group(1)] % int(mm.group(2))
            if name == "len":
                return length(cur)
        if not first and isinstance(cur, list | tuple) and name in ("len", "length", "count"):
            return len(cur)
        raise Uninterpretable(f"{path!r}: nothing named {name!r} here")

    def _index(self, cur: Any, inner: str, path: str) -> Any:
        inner = inner.strip()
        rng = re.fullmatch(r"(\d*)\s*\.\.\s*(\d*)", inner)
        if rng and isinstance(cur, list | tuple):
            a = int(rng.group(1)) if rng.group(1) else 0
            b = int(rng.group(2)) if rng.group(2) else len(cur)
            return list(cur)[a:b]
        if isinstance(cur, list | tuple):
            idx = int_of(inner)
            if idx is None:
                idx = self._value(inner)
            if not isinstance(idx, int) or isinstance(idx, bool):
                raise Uninterpretable(f"{path!r}: index {inner!r} is not a number")
            if not -len(cur) <= idx < len(cur):
                raise Mismatch(f"{path}: index {idx} out of range in {j(cur)}")
            return cur[idx]
        if isinstance(cur, dict):
            key = inner[1:-1] if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "\"'" else inner
            if key in cur:
                return cur[key]
            try:
                v = self._value(inner)
            except (Uninterpretable, Mismatch):
                v = _NO
            if v is not _NO:
                for cand in (str(v) if isinstance(v, int | str) else None, self.key_of(v)):
                    if cand is not None and cand in cur:
                        return cur[cand]
            raise Mismatch(f"{path}: no entry {inner!r} in {j(sorted(cur))}")
        raise Uninterpretable(f"{path!r}: {j(cur)} cannot be indexed")

    def _call(self, obj: Any, name: str, arg: str, path: str) -> Any:
        """``name(arg)``: an accessor of the object before it, or a free function (``plh(100)``)."""
        fn = self.calls.get(name)
        if fn is None:
            raise Uninterpretable(f"{path!r}: no accessor {name}(...)")
        args = [self._value(a) for a in _split_top(arg, ",")] if arg.strip() else []
        return fn(obj, *args)

    # -- checking
    def check(self, key: str, expected: Any, matcher: Matcher, strict_text: bool) -> None:
        """Assert observation ``key`` against ``expected`` (raises :class:`Mismatch`)."""
        if key in COMMENT_KEYS or key.endswith("_note"):
            return
        for text, op in _CMP:
            if text in key and isinstance(expected, bool):
                left, right = key.split(text, 1)
                lv, rv = self._value(left), self._value(right)
                got = _compare(op, lv, rv)
                if got != expected:
                    raise Mismatch(f"{key}: {j(lv)} {op} {j(rv)} is {got}, expected {expected}")
                return
        for suffix in _PREDICATES:
            if key.endswith(suffix) and len(key) > len(suffix):
                stem = key[: -len(suffix)]
                try:
                    actual = self.resolve(key)
                except (Uninterpretable, Mismatch):
                    actual = _NO
                if actual is not _NO and suffix not in ("_unchanged",):
                    break  # the name exists as given: no predicate
                self._predicate(key, stem, suffix, expected, matcher)
                return
        actual = self.resolve(key)
        matcher.lenient = not strict_text
        try:
            matcher.match(expected, actual, key, self)
        finally:
            matcher.lenient = False

    def _predicate(self, key: str, stem: str, suffix: str, expected: Any, matcher: Matcher) -> None:
        if suffix == "_unchanged":
            if self.before is None:
                raise Uninterpretable(f"{key}: no observation before the step")
            now = self.resolve(stem)
            was = Namespace(self.before, self.block_size, calls=self.calls, key_of=self._key_of).resolve(stem)
            same = j(now) == j(was)
            if not isinstance(expected, bool) or same != expected:
                raise Mismatch(f"{key}: before {j(was)}, after {j(now)}")
            return
        actual = self.resolve(stem)
        if suffix in ("_at_least", "_at_most"):
            want = expected if not isinstance(expected, str) else self._value(expected)
            n = actual if isinstance(actual, int) else length(actual)
            ok = n >= want if suffix == "_at_least" else n <= want
            if not ok:
                raise Mismatch(f"{key}: {stem} = {j(actual)}, expected {suffix[1:].replace('_', ' ')} {j(want)}")
            return
        if suffix == "_as_set":
            a = sorted(map(j, actual if isinstance(actual, list | tuple) else [actual]))
            e = sorted(map(j, expected if isinstance(expected, list) else [expected]))
            if a != e:
                raise Mismatch(f"{key}: expected the set {j(expected)}, got {j(actual)}")
            return
        if suffix == "_order":
            matcher.match(expected, actual, key, self)
            return
        if suffix == "_exact":
            if isinstance(expected, dict) and isinstance(actual, dict):
                want = {str(k): v for k, v in expected.items()}
                got_keys = set(actual)
                resolved = {(Matcher._key(k, actual, self) or k) for k in want}
                if resolved != got_keys:
                    raise Mismatch(f"{key}: expected exactly {j(expected)}, got {j(actual)}")
            matcher.match(expected, actual, key, self)
            return
        if suffix == "_in":
            pool = expected if isinstance(expected, list) else [expected]
            members = actual if isinstance(actual, list | tuple) else [actual]
            if not members or any(x not in pool for x in members):
                raise Mismatch(f"{key}: {j(actual)} is not among {j(pool)}")
            return
        if suffix == "_contains":
            items = expected if isinstance(expected, list) else [expected]
            missing = [x for x in items if not self._contains(actual, x)]
            if missing:
                raise Mismatch(f"{key}: {j(missing)} not in {j(actual)}")
            return
        raise Uninterpretable(f"{key}: unknown form {suffix!r}")


def _compare(op: str, a: Any, b: Any) -> bool:
    if op == "==":
        return j(a) == j(b)
    if op == "!=":
        return j(a) != j(b)
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (a, b)):
        raise Uninterpretable(f"{j(a)} {op} {j(b)}: not numbers")
    return bool({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op])


def _is_empty(ns: Namespace, base: str, v: Any) -> bool:
    return v is None or length(v) == 0


_DERIVED: list[tuple[str, Callable[[Namespace, str, Any], Any]]] = [
    ("_after", lambda ns, base, v: v),  # observations are taken after the step
    ("_len", lambda ns, base, v: length(v)),
    ("_count", lambda ns, base, v: length(v)),
    ("_is_empty", _is_empty),
    ("_empty", _is_empty),
    ("_nonempty", lambda ns, base, v: not _is_empty(ns, base, v)),
    ("_is_some", lambda ns, base, v: v is not None),
    ("_is_none", lambda ns, base, v: v is None),
    ("_some", lambda ns, base, v: v is not None),
]


# --------------------------------------------------------------------------- steps


def panic_expected(step: dict[str, Any]) -> str | None:
    expect = step.get("expect") or {}
    if not isinstance(expect, dict):
        raise Uninterpretable(f"expect must be an object, got {j(expect)}")
    panic = expect.get("panic")
    ret = expect.get("returns")
    if panic is None and isinstance(ret, dict) and "panic" in ret:
        panic = ret["panic"]
    return None if panic is None else str(panic)


def check_step(step: dict[str, Any], ns: Namespace, matcher: Matcher, error: Exception | None) -> None:
    """Check a step's ``expect`` (strictly) and ``derived_not_asserted`` against ``ns``; a
    panic is expected exactly when ``expect`` says so (by a substring of the Rust message)."""
    expect = step.get("expect") or {}
    derived = step.get("derived_not_asserted") or {}
    for what, d in (("expect", expect), ("derived_not_asserted", derived)):
        if not isinstance(d, dict):
            raise Uninterpretable(f"{what} must be an object, got {j(d)}")
    panic = panic_expected(step)
    if panic is not None:
        if error is None:
            raise Mismatch(f"expected a panic containing {panic!r}, the model did not raise")
        if panic not in str(error):
            raise Mismatch(f"expected a panic containing {panic!r}, got {error}")
    elif error is not None:
        raise Mismatch(f"the model raised {error}")
    for key, val in expect.items():
        if key == "panic" or (key == "returns" and panic is not None and isinstance(val, dict)):
            continue
        ns.check(key, val, matcher, strict_text=True)
    for key, val in derived.items():
        if key == "panic":
            continue
        ns.check(key, val, matcher, strict_text=False)


def revision_for(source_version: str, table: Iterable[tuple[str, str]], default: str | None) -> str | None:
    """The revision a vector's ``source_version`` names (the first pattern found), else ``default``."""
    for pattern, rev in table:
        if re.search(pattern, source_version):
            return rev
    return default
