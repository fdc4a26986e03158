"""Run test vectors in the ``dynamo-kv-test-vectors/1`` format against the model.

Each vector names a component, a constructor and steps; a step has an ``op``, ``args``,
``expect`` (what the Rust test asserts, exactly) and ``derived_not_asserted`` (what the
semantics implies and a faithful model must also produce). Both are checked.

Expectation keys are read as paths into a namespace built after each step
(``blocks[1].sequence_hash``, ``seq1.unique_blocks[0..2]``, ``signal[0]``), with the
suffixes ``_len`` (a length) and ``_mod_N`` / ``_mod_block_size``, and comparisons
``A == B`` / ``A != B`` whose expected value is a boolean. Symbolic partial-block names
(``{"P": "seq1.u0"}``) are unified with the model's names one-to-one. A key the runner
cannot interpret is a failure, never a silent pass.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs

from kvmodel.model.blocks import FullBlock, MoveBlock, UniqueBlock, move_block_from_json
from kvmodel.model.errors import InvalidInput, ModelError
from kvmodel.model.hashing import TokenBlockSequence
from kvmodel.model.kv_manager import KvManager
from kvmodel.model.lru import CounterLRU, WallClockLRU
from kvmodel.model.registry import PublishHandle as PublishHandleT
from kvmodel.model.sequence import ActiveSequence

COMMENT_KEYS = {"note", "notes", "rule", "comment"}


class VectorFileError(Exception):
    """A vectors file that cannot be read; one line naming the file and the problem."""


class Mismatch(Exception):
    pass


class Uninterpretable(Exception):
    pass


@attrs.define
class VectorResult:
    id: str
    component: str
    status: str  # PASS, FAIL or SKIP
    message: str = ""

    def line(self) -> str:
        return f"{self.status} {self.id}" + (f": {self.message}" if self.message else "")


# --------------------------------------------------------------------------- file


def load_file(path: str | Path) -> list[dict[str, Any]]:
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except OSError as e:
        raise VectorFileError(f"{p}: cannot read: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise VectorFileError(f"{p}: not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    vectors = data.get("vectors") if isinstance(data, dict) else None
    if not isinstance(vectors, list):
        raise VectorFileError(f"{p}: not a vectors file: no top-level 'vectors' list")
    for i, v in enumerate(vectors):
        if not isinstance(v, dict) or not isinstance(v.get("component"), str) or not isinstance(v.get("steps"), list):
            raise VectorFileError(f"{p}: vector #{i} needs a 'component' string and a 'steps' list")
    return vectors


def vector_id(v: dict[str, Any]) -> str:
    return str(v.get("id") or f"{v['component']}::{v.get('name', '?')}")


# --------------------------------------------------------------------------- matching


def _int_of(x: Any) -> int | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, str) and re.fullmatch(r"-?\d+", x.strip()):
        return int(x)
    return None


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
        if isinstance(exp, dict) and len(exp) == 1 and isinstance(act, dict) and len(act) == 1:
            ((ek, ev),) = exp.items()
            ((ak, av),) = act.items()
            if ek in ("Use", "Destroy", "Deref", "Promote", "Store", "Remove") or ak in (
                "Use",
                "Destroy",
                "Deref",
                "Promote",
            ):
                if ek != ak:
                    raise Mismatch(f"{where}: expected {ek}, got {ak}")
                if isinstance(ev, dict) and isinstance(av, list):
                    self._descriptor(ev, av, f"{where}.{ek}")
                    return
                if ek == "Promote" and isinstance(ev, dict) and isinstance(av, dict):
                    for k, v in ev.items():
                        if k == "uuid" and isinstance(v, str):
                            self.unify(v, str(av.get("uuid")), f"{where}.uuid")
                        elif k == "parent_hash" and isinstance(v, str) and ns is not None:
                            ref = ns.resolve(re.sub(r"\s*\(.*\)\s*$", "", v))
                            want = ref.get("F") if isinstance(ref, dict) else ref
                            self.match(want, av.get(k), f"{where}.{k}")
                        else:
                            self.match(v, av.get(k), f"{where}.{k}", ns)
                    return
                self.match(ev, av, f"{where}.{ek}", ns)
                return
        if isinstance(exp, dict):
            if not isinstance(act, dict):
                raise Mismatch(f"{where}: expected an object {_j(exp)}, got {_j(act)}")
            for k, v in exp.items():
                if k in COMMENT_KEYS:
                    continue
                if k not in act:
                    raise Mismatch(f"{where}: missing {k!r} in {_j(act)}")
                self.match(v, act[k], f"{where}.{k}", ns)
            return
        if isinstance(exp, list):
            if not isinstance(act, list | tuple):
                raise Mismatch(f"{where}: expected a list {_j(exp)}, got {_j(act)}")
            if len(exp) != len(act):
                raise Mismatch(f"{where}: expected {_j(exp)}, got {_j(act)}")
            for i, (e, a) in enumerate(zip(exp, act, strict=True)):
                self.match(e, a, f"{where}[{i}]", ns)
            return
        if isinstance(exp, int) and not isinstance(exp, bool) and isinstance(act, dict) and "block_hash" in act:
            # a stored block named by its hash alone
            self.match(exp, act["block_hash"], f"{where}.block_hash", ns)
            return
        if isinstance(exp, str) and exp.startswith("== ") and ns is not None:
            ref = ns.resolve(exp[3:])
            if ref != act:
                raise Mismatch(f"{where}: expected {exp[3:]} = {_j(ref)}, got {_j(act)}")
            return
        if isinstance(exp, str) and not isinstance(act, str) and _int_of(exp) is None and ns is not None:
            # a symbolic value naming another observable ("events[0].blocks[1].block_hash", "S.h[2]")
            try:
                ref = ns.resolve(exp)
            except (Uninterpretable, Mismatch):
                ref = None
            if ref is not None and not isinstance(ref, dict | list):
                if ref != act:
                    raise Mismatch(f"{where}: expected {exp} = {_j(ref)}, got {_j(act)}")
                return
        if self.lenient and isinstance(exp, str) and not isinstance(act, str) and _int_of(exp) is None:
            return
        if exp != act or (type(exp) is bool and type(act) is not bool):
            raise Mismatch(f"{where}: expected {_j(exp)}, got {_j(act)}")

    def _descriptor(self, desc: dict[str, Any], blocks: list[Any], where: str) -> None:
        for k, v in desc.items():
            if k == "num_blocks":
                self.match(v, len(blocks), f"{where}.num_blocks")
            elif m := re.fullmatch(r"block(\d+)_is_(partial|full)", k):
                i = int(m.group(1))
                if i >= len(blocks):
                    raise Mismatch(f"{where}: no block {i} in {_j(blocks)}")
                is_kind = "P" in blocks[i] if m.group(2) == "partial" else "F" in blocks[i]
                self.match(v, is_kind, f"{where}.{k}")
            elif k in COMMENT_KEYS:
                continue
            else:
                raise Uninterpretable(f"{where}: unknown signal descriptor {k!r}")


def _length(x: Any) -> int:
    """``len()`` of a value; an object with a ``len`` field (a Rust type's ``len()``) gives that."""
    if isinstance(x, dict) and "len" in x:
        return int(x["len"])
    return len(x)


def _j(x: Any) -> str:
    s = json.dumps(x, sort_keys=True, default=str)
    return s if len(s) <= 200 else s[:197] + "..."


# --------------------------------------------------------------------------- namespace

_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_:]*|\[\s*\d+\s*(?:\.\.\s*\d+\s*)?\]|\(\s*\d+\s*\)|\.")


class Namespace:
    """Values observable after a step; keys are resolved as paths into it."""

    def __init__(self, values: dict[str, Any], block_size: int | None = None) -> None:
        self.values = values
        self.block_size = block_size

    def resolve(self, path: str) -> Any:
        path = path.strip()
        if path in self.values:
            return self.values[path]
        m = re.fullmatch(r"(.+?)_mod_(\d+|block_size)", path)
        if m:
            base = self.resolve(m.group(1))
            n = self.block_size if m.group(2) == "block_size" else int(m.group(2))
            if n is None:
                raise Uninterpretable(f"{path}: no block size known")
            return base % n
        if path.endswith("_len"):
            return _length(self.resolve(path[: -len("_len")]))
        parts = _PATH.findall(path)
        if "".join(parts) != path.replace(" ", ""):
            raise Uninterpretable(f"cannot read {path!r} as a path")
        cur: Any = self.values
        first = True
        for tok in parts:
            if tok == ".":
                continue
            if tok.startswith("["):
                inner = tok[1:-1]
                if ".." in inner:
                    a, b = (int(x) for x in inner.split(".."))
                    cur = list(cur)[a:b]
                else:
                    idx = int(inner)
                    if not isinstance(cur, list | tuple) or idx >= len(cur):
                        raise Mismatch(f"{path}: index {idx} out of range in {_j(cur)}")
                    cur = cur[idx]
                continue
            if isinstance(cur, dict) and tok in cur:
                cur = cur[tok]
            elif isinstance(cur, dict) and first is False and tok.endswith("_len") and tok[:-4] in cur:
                cur = _length(cur[tok[:-4]])
            elif (
                isinstance(cur, dict)
                and first is False
                and (mm := re.fullmatch(r"(.+?)_mod_(\d+)", tok))
                and mm.group(1) in cur
            ):
                cur = cur[mm.group(1)] % int(mm.group(2))
            else:
                raise Uninterpretable(f"{path!r}: nothing named {tok!r} here")
            first = False
        return cur

    def check(self, key: str, expected: Any, matcher: Matcher, strict_text: bool) -> None:
        if key in COMMENT_KEYS or key.endswith("_note"):  # prose
            return
        for opname, eq in ((" == ", True), (" != ", False)):
            if opname in key and isinstance(expected, bool):
                left, right = key.split(opname, 1)
                lv, rv = self.resolve(left), self.resolve(right)
                same = _j(lv) == _j(rv)
                if same != (eq == expected):
                    raise Mismatch(f"{key}: {_j(lv)} vs {_j(rv)}")
                return
        actual = self.resolve(key)
        matcher.lenient = not strict_text
        try:
            matcher.match(expected, actual, key, self)
        finally:
            matcher.lenient = False


# --------------------------------------------------------------------------- runners


def _tokens(spec: Any) -> list[int]:
    if isinstance(spec, list):
        return [int(t) for t in spec]
    if isinstance(spec, str):
        m = re.match(r"\s*(\d+)\s*\.\.\s*(\d+)", spec)
        if m:
            return list(range(int(m.group(1)), int(m.group(2))))
    raise Uninterpretable(f"cannot read tokens {spec!r}")


def _check_step(step: dict[str, Any], ns: Namespace, matcher: Matcher, error: ModelError | None) -> None:
    expect = step.get("expect") or {}
    panic = expect.get("panic")
    ret = expect.get("returns")
    if panic is None and isinstance(ret, dict) and "panic" in ret:
        panic = ret["panic"]
    if panic is not None:
        if error is None:
            raise Mismatch(f"expected a panic containing {panic!r}, the model did not raise")
        if str(panic) not in str(error):
            raise Mismatch(f"expected a panic containing {panic!r}, got {error}")
    elif error is not None:
        raise Mismatch(f"the model raised {error}")
    for key, val in expect.items():
        if key == "panic" or (key == "returns" and panic is not None):
            continue
        ns.check(key, val, matcher, strict_text=True)
    for key, val in (step.get("derived_not_asserted") or {}).items():
        ns.check(key, val, matcher, strict_text=False)


def _blockmap(active: dict[UniqueBlock, int]) -> dict[str, int]:
    return {(str(b.hash) if isinstance(b, FullBlock) else f"P:{b.uuid}"): rc for b, rc in active.items()}


def run_lru(v: dict[str, Any]) -> None:
    cons = v.get("constructor") or {}
    ev: WallClockLRU[Any] | CounterLRU[Any]
    if v["component"] == "lru_evictor_wallclock":
        ev = WallClockLRU(cons.get("cleanup_threshold", 50))
    else:
        ev = CounterLRU()
    matcher = Matcher()
    for i, step in enumerate(v["steps"]):
        op, args = step.get("op"), step.get("args") or {}
        result: Any = None
        if op == "insert":
            ev.insert(args["object"], args.get("clock"))
        elif op == "push_front" and isinstance(ev, CounterLRU):
            ev.push_front(args["object"])
        elif op == "remove":
            result = ev.remove(args["object"])
        elif op == "evict":
            result = ev.evict()
        elif op in ("len", "num_objects"):
            result = len(ev)
        elif op == "contains":
            result = ev.contains(args["object"])
        else:
            raise Uninterpretable(f"step {i}: unknown {v['component']} op {op!r}")
        ns = Namespace({"returns": result, "len": len(ev), "order": ev.order()})
        _at(i, op, functools.partial(_check_step, step, ns, matcher, None))


def _at(i: int, op: Any, fn: Callable[[], None]) -> None:
    try:
        fn()
    except Mismatch as e:
        raise Mismatch(f"step {i} ({op}): {e}") from None
    except Uninterpretable as e:
        raise Uninterpretable(f"step {i} ({op}): {e}") from None


def run_old_kv_manager(v: dict[str, Any]) -> None:
    cons = v.get("constructor") or {}
    m = KvManager(
        cons.get("max_capacity", 0),
        cons.get("block_size", 16),
        channel=bool(cons.get("response_channel", True)),
    )
    matcher = Matcher()
    for i, step in enumerate(v["steps"]):
        op, args = step.get("op"), step.get("args")
        result: Any = None
        error: ModelError | None = None
        try:
            if op == "process":
                sig: MoveBlock = move_block_from_json(args)
                result = m.process(sig)
            elif op == "probe_new_blocks":
                from kvmodel.model.blocks import blocks_from_json

                result = m.probe_new_blocks(blocks_from_json((args or {}).get("blocks")))
            elif op in ("current_capacity", "num_active_blocks", "num_inactive_blocks"):
                result = getattr(m, op)()
            else:
                raise Uninterpretable(f"step {i}: unknown old_kv_manager op {op!r}")
        except ModelError as e:
            error = e
        events = [e.to_json() for e in m.drain_events()]
        order = [b.hash if isinstance(b, FullBlock) else b.uuid for b in m.inactive.order()]
        state = {
            "active_exact": _blockmap(m.active),
            "active": _blockmap(m.active),
            "inactive_count": len(m.inactive),
            "inactive_lru_order_oldest_first": order,
            "current_capacity": m.current_capacity(),
            "num_active_blocks": m.num_active_blocks(),
            "num_inactive_blocks": m.num_inactive_blocks(),
        }
        ns = Namespace({"returns": result, "events": events, "events_full": events, **state})
        ns.values["after_last_step"] = state

        def check(
            step: dict[str, Any] = step, ns: Namespace = ns, error: ModelError | None = error, order: list[Any] = order
        ) -> None:
            exp = step.get("expect") or {}
            der = step.get("derived_not_asserted") or {}
            for src in (exp, der):
                if "inactive_contains" in src:
                    missing = [x for x in src["inactive_contains"] if x not in order]
                    if missing:
                        raise Mismatch(f"inactive_contains: {missing} not in inactive {order}")
            step2 = {
                "expect": {k: val for k, val in exp.items() if k != "inactive_contains"},
                "derived_not_asserted": {k: val for k, val in der.items() if k != "inactive_contains"},
            }
            for src in (step2["expect"], step2["derived_not_asserted"]):
                for k in ("active_exact", "active"):
                    if k in src:
                        want = {str(a): b for a, b in src.pop(k).items()}
                        if want != ns.values["active_exact"]:
                            raise Mismatch(f"{k}: expected {_j(want)}, got {_j(ns.values['active_exact'])}")
                if isinstance(src.get("after_last_step"), dict):
                    a = dict(src.pop("after_last_step"))
                    if "active" in a:
                        want = {str(x): y for x, y in a.pop("active").items()}
                        if want != ns.values["active_exact"]:
                            raise Mismatch(
                                f"after_last_step.active: expected {_j(want)}, got {_j(ns.values['active_exact'])}"
                            )
                    for k2, v2 in a.items():
                        ns.check(k2, v2, matcher, strict_text=False)
            _check_step(step2, ns, matcher, error)

        _at(i, op, check)


def _seq_view(s: ActiveSequence) -> dict[str, Any]:
    return {
        "len": len(s),
        "num_input_tokens": s.num_input_tokens,
        "generated_tokens": s.generated_tokens,
        "already_generated_tokens": s.already_generated_tokens,
        "unique_blocks": [b.to_json() for b in s.unique_blocks],
        "block_size": s.block_size,
        "len_mod_block_size": len(s) % s.block_size,
    }


def run_old_active_sequence(v: dict[str, Any]) -> None:
    cons = v.get("constructor") or {}
    seqs: dict[str, ActiveSequence] = {}
    matcher = Matcher()
    last = "seq"
    for i, step in enumerate(v["steps"]):
        op, args = step.get("op"), dict(step.get("args") or {})
        error: ModelError | None = None
        extra: dict[str, Any] = {}

        def sigs(x: list[MoveBlock] | None) -> list[dict[str, Any]] | None:
            return None if x is None else [s.to_json() for s in x]

        try:
            if op in ("new_with_signal", "new"):
                spec = {**cons, **args}
                name = str(spec.get("name", "seq"))
                s, sig = ActiveSequence.new_with_signal(
                    _tokens(spec["tokens"]),
                    int(spec["max_output_tokens"]),
                    spec.get("block_size"),
                    bool(spec.get("enable_prefix_caching", True)),
                    name=name,
                )
                seqs[name] = s
                last = name
                extra = {"signal": sig.to_json() if sig else None, "returns": sig.to_json() if sig else None}
            else:
                name = str(args.get("seq", last))
                if op in ("push", "pop", "generate", "reset_with_signal", "free_signal") and name not in seqs:
                    raise Uninterpretable(f"step {i}: no sequence named {name!r}")
                if op != "push_each" and op != "compare":
                    last = name
                if op == "push":
                    out = sigs(seqs[name].push(int(args["token"])))
                    extra = {"returns": out, "signal": out, "signals": out, "num_signals": len(out or [])}
                elif op == "pop":
                    seqs[name].pop()
                elif op == "generate":
                    out = sigs(seqs[name].generate())
                    extra = {"returns": out, "signal": out, "signals": out, "num_signals": len(out or [])}
                elif op in ("reset_with_signal", "free_signal"):
                    out = sigs(getattr(seqs[name], op)())
                    assert out is not None
                    extra = {"returns": out, "free_signals": out, "free_signals_nonempty": bool(out)}
                    if op == "reset_with_signal":
                        extra["after_reset"] = _seq_view(seqs[name])
                elif op == "push_each":
                    for t in _tokens(args["tokens"]):
                        for sn in args["seqs"]:
                            seqs[sn].push(t)
                elif op == "compare":
                    pass
                else:
                    raise Uninterpretable(f"step {i}: unknown old_active_sequence op {op!r}")
        except ModelError as e:
            error = e
        values: dict[str, Any] = {n: _seq_view(s) for n, s in seqs.items()}
        if last in seqs:
            values.update(_seq_view(seqs[last]))
        values.update(extra)
        ns = Namespace(values, seqs[last].block_size if last in seqs else None)
        _at(i, op, functools.partial(_check_step, step, ns, matcher, error))


def run_token_block_sequence(v: dict[str, Any]) -> None:
    cons = v.get("constructor") or {}
    matcher = Matcher()
    for i, step in enumerate(v["steps"]):
        op = step.get("op")
        args = {**cons, **(step.get("args") or {})}
        if op not in ("TokenBlockSequence::new", "new"):
            raise Uninterpretable(f"step {i}: unknown token_block_sequence op {op!r}")
        error: ModelError | None = None
        values: dict[str, Any] = {}
        try:
            seq = TokenBlockSequence(
                _tokens(args["tokens"]), int(args["block_size"]), args.get("salt_hash", args.get("salt"))
            )
            values = {
                "blocks": [attrs.asdict(b) | {"tokens": list(b.tokens)} for b in seq.blocks],
                "current_block": {"tokens": seq.current_block, "len": len(seq.current_block)},
                "total_tokens": seq.total_tokens(),
            }
        except ModelError as e:
            error = e
        ns = Namespace(values)
        _at(i, op, functools.partial(_check_step, step, ns, matcher, error))


def _radix_event(args: dict[str, Any]) -> Any:
    from kvmodel.model.events import event_from_json

    data: Any
    if "Stored" in args:
        data = {"stored": args["Stored"]}
    elif "Removed" in args:
        data = {"removed": args["Removed"]}
    elif "Cleared" in args or args.get("data") == "cleared":
        data = "cleared"
    else:
        raise Uninterpretable(f"no Stored/Removed/Cleared in {args}")
    return event_from_json({"event_id": args.get("event_id", 0), "data": data, "dp_rank": args.get("dp_rank", 0)})


def _radix_inspect(tree: Any, key: str) -> Any:
    """The internal counts the radix-tree vectors assert, on the per-block tree."""
    import re

    nodes, lookup = tree.nodes, tree.lookup
    if key == "lookup_len":
        return len(lookup)
    if key == "lookup_size":
        return {str(w): len(t) for (w, _), t in lookup.items()}
    if key in ("root.workers", "root.children"):
        root = nodes[0]
        return len(root.workers) if key.endswith("workers") else len(root.children)
    m = re.fullmatch(r"node\((\d+)\)\.(workers|children)", key)
    if m:
        n = nodes[nodes[0].children[int(m.group(1))]]
        return len(n.workers) if m.group(2) == "workers" else len(n.children)
    m = re.fullmatch(r"lookup\[(\d+)\]\[(\d+)\]\.workers", key)
    if m:
        node = lookup[(int(m.group(1)), 0)][int(m.group(2))]
        return sorted(w for w, _ in nodes[node].workers)
    m = re.fullmatch(r"lookup_contains_worker_(\d+)", key)
    if m:
        return any(w == int(m.group(1)) for w, _ in lookup)
    raise Uninterpretable(f"unknown inspect key {key!r}")


def run_radix_tree(v: dict[str, Any]) -> None:
    """``kv_router_radix_tree`` vectors: the per-block tree of the revision they come from."""
    from kvmodel.model.router import RadixTree

    tree = RadixTree()
    for i, step in enumerate(v["steps"]):
        op, args, expect = step.get("op"), step.get("args") or {}, step.get("expect") or {}
        got: dict[str, Any] = {}
        if op == "apply_event":
            try:
                tree.apply_event(args["worker_id"], _radix_event(args))
                got["returns"] = "Ok"
            except ModelError as e:
                got["returns"] = f"Err({e.id})"
        elif op == "find_matches":
            scores = tree.find_matches(list(args["local_hashes"]), bool(args.get("early_exit", False)))
            got["scores"] = {str(w): n for (w, _), n in sorted(scores.items())}
            got["score_keys"] = sorted(w for w, _ in scores)
        elif op == "remove_worker":
            tree.remove_worker(args["worker_id"])
        elif op == "clear_all_blocks":
            tree.clear_all_blocks(args["worker_id"])
        elif op != "inspect":
            raise Uninterpretable(f"step {i}: unknown radix-tree op {op!r}")
        for key, want in expect.items():
            have = got[key] if key in got else _radix_inspect(tree, key)
            if isinstance(want, int) and isinstance(have, list):
                have = len(have)
            if key == "lookup_size" and isinstance(want, dict):  # only the workers listed are asserted
                have = {k: have.get(k) for k in want}
            if have != want:
                raise Mismatch(f"step {i} ({op}): {key}: expected {_j(want)}, model {_j(have)}")


def _fixture_blocks() -> list[Any]:
    """``create_sequence()`` of the registry tests: tokens 1..10, block size 4, salt 1337."""
    from kvmodel.model.registry import Block

    seq = TokenBlockSequence(range(1, 11), 4, 1337)
    return [Block(b.sequence_hash, b.block_hash, b.parent_sequence_hash) for b in seq.blocks]


def run_registry(v: dict[str, Any]) -> None:
    """``kvbm_block_registry`` vectors. Commit 403dd259 (and R11) vectors run the faithful
    untiered revision; R12/R13 vectors the tiered registry (``global_registry_untiered`` off)."""
    from kvmodel.model.quirks import faithful
    from kvmodel.model.registry import RegHandle, Registry

    src = str(v.get("source_version", ""))
    tiered = bool(re.search(r"\bR1[23]\b", src))
    quirks = set(faithful("kvbm_block_registry")) - ({"global_registry_untiered"} if tiered else set())
    m = Registry(quirks)
    blocks = _fixture_blocks()
    seen = 0

    def block(spec: Any) -> Any:
        mm = re.fullmatch(r"(?:Complete\()?blocks\[(\d+)\]\)?", str(spec))
        if not mm:
            raise Uninterpretable(f"unknown block {spec!r}")
        return blocks[int(mm.group(1))]

    for i, step in enumerate(v["steps"]):
        op, a, expect = step.get("op"), dict(step.get("args") or {}), dict(step.get("expect") or {})
        got: dict[str, Any] = {}
        try:
            if op == "new_registry":
                m.new_registry(a["as"], a.get("tier", "Device"), a.get("global_registry", "G"))
            elif op == "create_publish_handle":
                m.create_publish_handle(a["as"], block(a["block"]), a.get("tier", "Device"))
            elif op == "state_from_reset_apply_token_block":
                m.state_from_block(a["as"], block(a["block"]))
            elif op == "register_block":
                state = a["state"]
                if str(state).startswith("Complete("):
                    state = m.state_from_block(None, block(state))
                eh = a.get("event_hashes")
                ph = m.register_block(a["registry"], state, a.get("as"), None if eh is None else (eh[0], eh[1]))
                got["returns"] = "Ok(Some(publish_handle))" if ph is not None else "Ok(None)"
                got["returns_publish_handle"] = ph is not None
            elif op == "remove_handle":
                m.remove_handle(a["publish_handle"], a["as"])
            elif op == "new_publisher":
                m.new_publisher(a["as"])
            elif op == "take_handle":
                m.take_handle(a["publisher"], a["publish_handle"], a.get("as"))
            elif op == "publish":
                m.publish(a["publisher"])
            elif op == "drop":
                m.drop(a["value"])
            elif op == "sync_external_sequence_hashes":
                hs = list(a["hashes"])
                blocks = [
                    attrs.evolve(b, external=hs[k], external_parent=hs[k - 1] if k else None)
                    for k, b in enumerate(blocks[: len(hs)])
                ] + blocks[len(hs) :]
            elif op == "registration_handle_from_token_block":
                h = RegHandle(0, block(a["block"]), a.get("tier", "Device"), False)
                got.update(
                    external_sequence_hash=h.block.external,
                    external_parent_sequence_hash=h.block.external_parent,
                    published_sequence_hash=h.published_hash,
                    published_parent_sequence_hash=h.published_parent,
                )
            elif op not in ("observe_channel", "inspect"):
                raise Uninterpretable(f"step {i}: unknown registry op {op!r}")
        except ModelError as e:
            raise Mismatch(f"step {i} ({op}): the model raised {e}") from None
        # The fixture's symbolic names: H<i> = blocks[i].sequence_hash (the 'fixture' notation).
        sym = {b.sequence_hash: f"H{k}" for k, b in enumerate(_fixture_blocks())}
        msgs = [
            [e.text().replace(str(e.sequence_hash), sym.get(e.sequence_hash, str(e.sequence_hash))) for e in batch]
            for batch in m.messages[seen:]
        ]
        seen = len(m.messages)
        got["messages"] = msgs
        got["messages_count"] = len(msgs)
        for k, batch in enumerate(msgs):
            got[f"message[{k}]_as_set"] = sorted(batch)
            got[f"message[{k}]_order"] = batch
        checks = list(expect.items()) + list((step.get("derived_not_asserted") or {}).items())
        for key, want in checks:
            mm = re.fullmatch(r"(\w+)\.registration\.storage_tier", key)
            if mm:
                val = m.values.get(mm.group(1))
                have: Any = None if not isinstance(val, PublishHandleT) else m.handles[val.reg].tier
            elif key in got:
                have = got[key]
            else:
                raise Uninterpretable(f"step {i} ({op}): unknown expectation {key!r}")
            if key.endswith("_as_set"):
                want = sorted(want)
            if have != want:
                raise Mismatch(f"step {i} ({op}): {key}: expected {_j(want)}, model {_j(have)}")


def _g1(name: str) -> Callable[[dict[str, Any]], None]:
    def run(v: dict[str, Any]) -> None:
        from kvmodel import vectors_g1

        getattr(vectors_g1, name)(v)

    return run


RUNNERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "native_vllm_block_pool": _g1("run_native_pool"),
    "native_vllm_backend": _g1("run_native_backend"),
    "g1_manager": _g1("run_g1_manager"),
    "kvbm_backend": _g1("run_kvbm_backend"),
    "kvbm_block_registry": run_registry,
    "kv_router_radix_tree": run_radix_tree,
    "lru_evictor_wallclock": run_lru,
    "lru_evictor_counter": run_lru,
    "old_kv_manager": run_old_kv_manager,
    "old_active_sequence": run_old_active_sequence,
    "token_block_sequence": run_token_block_sequence,
}


def run_vector(v: dict[str, Any]) -> VectorResult:
    vid, comp = vector_id(v), v["component"]
    runner = RUNNERS.get(comp)
    if runner is None:
        return VectorResult(vid, comp, "SKIP", f"component {comp!r} is not modelled yet")
    try:
        runner(v)
    except Mismatch as e:
        return VectorResult(vid, comp, "FAIL", str(e))
    except Uninterpretable as e:
        return VectorResult(vid, comp, "FAIL", f"cannot interpret: {e}")
    except (InvalidInput, KeyError, TypeError, ValueError) as e:
        return VectorResult(vid, comp, "FAIL", f"bad vector input: {type(e).__name__}: {e}")
    return VectorResult(vid, comp, "PASS")


def run_file(path: str | Path, components: Iterable[str] | None = None) -> list[VectorResult]:
    wanted = set(components or [])
    return [run_vector(v) for v in load_file(path) if not wanted or v["component"] in wanted]
