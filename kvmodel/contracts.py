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


# ----------------------------------------------------------------------------- operations
#
# One row per operation: (arguments, what ``returns`` holds). An argument is
# ``name: type`` (``?`` marks an optional one). Tests keep the rows equal to the systems'
# operations and to the arguments their decoders accept (stateful_tests/test_contracts.py).

BLOCKS = "list of {F: u64} | {P: name}"
REG_BLOCK = "{hash: u64, parent: u64|null, block_hash?: u64, external?: [u64|null, u64|null], tokens?: [u32]}"

OPERATIONS: dict[str, dict[str, tuple[dict[str, str], str]]] = {
    "kv_manager": {
        "process": (
            {"Use | Deref | Destroy": BLOCKS, "Promote": "{uuid: name, hash: u64, parent_hash?: u64|null}"},
            "`true`; `false` when a Use runs out of space (the pool is left as it was)",
        ),
        "probe_new_blocks": ({"blocks": BLOCKS}, "how many of the listed blocks are not resident (integer)"),
        "get_prefill_cost": (
            {"unique_blocks": BLOCKS, "num_input_tokens": "usize"},
            "`{new_blocks, new_tokens}`: blocks not resident, tokens less `block_size` per resident block",
        ),
        "current_capacity": ({}, "resident blocks, active and inactive (integer)"),
        "num_active_blocks": ({}, "blocks with a reference (integer)"),
        "num_inactive_blocks": ({}, "cached blocks without a reference (integer)"),
    },
    "lru_evictor_counter": {
        "insert": ({"object": "u64 | string"}, "`null`; the object becomes the most recently freed"),
        "push_front": ({"object": "u64 | string"}, "`null`; the object becomes the next to be evicted"),
        "remove": ({"object": "u64 | string"}, "whether the object was held (boolean)"),
        "evict": ({}, "the least recently freed object, removed; `null` when empty"),
        "len": ({}, "how many objects are held (integer)"),
    },
    "lru_evictor_wallclock": {
        "insert": (
            {"object": "u64 | string", "clock?": "u64"},
            "`null`; stamped with `clock` (default: the model's logical clock, which never goes back)",
        ),
        "remove": ({"object": "u64 | string"}, "whether the object was held (boolean)"),
        "evict": ({}, "the object with the oldest stamp, removed; `null` when empty"),
        "len": ({}, "how many objects are held (integer)"),
    },
    "kvbm_block_registry": {
        "new_registry": (
            {"as": "name", "tier?": "Device|HostPinned|Disk", "global_registry?": "name"},
            "`null`; a registry (pool) sharing the named global registry (default `G`)",
        ),
        "new_state": ({"as?": "name"}, "the name of a new Reset block state"),
        "state_from_reset_apply_token_block": (
            {"block": REG_BLOCK, "as?": "name"},
            "the name of a new Complete block state",
        ),
        "apply_token_block": ({"state": "name", "block": REG_BLOCK}, "`null`; Reset -> Complete"),
        "initialize_sequence": (
            {"state": "name", "page_size": "usize", "salt?": "u64"},
            "`null`; Reset -> Partial (an empty block of `page_size as u32` tokens)",
        ),
        "add_token": ({"state": "name", "token": "u32"}, "`null`"),
        "add_tokens": ({"state": "name", "tokens": "[u32]"}, "the tokens that did not fit (list)"),
        "pop_token": ({"state": "name"}, "`null`"),
        "pop_tokens": ({"state": "name", "count": "usize"}, "`null`"),
        "commit": ({"state": "name"}, "`null`; Partial -> Complete (a root block hashed with the salt)"),
        "state_query": (
            {"state": "name", "query": "len|remaining|is_empty|tokens|is_reset|is_complete|is_registered"},
            "the accessor's value (integer, boolean, list or `null`)",
        ),
        "register_block": (
            {"registry": "name", "state": "name", "as?": "name", "event_hashes?": "[u64|null, u64|null] (R13)"},
            "the name of the new publish handle, or `null` when the registration already existed",
        ),
        "create_publish_handle": (
            {"block": REG_BLOCK, "as?": "name", "tier?": "Device|HostPinned|Disk"},
            "the name of a new publish handle (the Rust tests' helper)",
        ),
        "remove_handle": ({"publish_handle": "name", "as?": "name"}, "the name of the registration Arc it gives up"),
        "new_publisher": ({"as?": "name"}, "the name of a new publisher"),
        "take_handle": (
            {"publisher": "name", "publish_handle": "name", "as?": "name"},
            "the name of the Arc kept, or `null`",
        ),
        "publish": ({"publisher": "name"}, "`null`; one message: a Register per taken handle, in take order"),
        "clone_publisher": ({"publisher": "name", "as?": "name"}, "the name of the clone"),
        "drop": ({"value": "name"}, "`null`; Rust's drop of the named value (a last Arc sends its Remove)"),
        "drain": ({"registry": "name"}, "the hash the unregister task received and handled, or `null`"),
        "is_registered": ({"registry": "name", "hash": "u64"}, "whether the registry holds a live handle (boolean)"),
    },
}

_G1_COMMON: dict[str, tuple[dict[str, str], str]] = {
    "new_request": (
        {"owner": "u63", "tokens": "[u32] (at most 4096)"},
        "`null`; the request's sequence (no signal yet)",
    ),
    "push": ({"owner": "u63", "token": "u32"}, "the signals' results, one per signal the token caused (list)"),
    "free": ({"owner": "u63"}, "the terminal Deref's result (`Ready(n)`)"),
    "reserve_decode": ({"count": "usize"}, "`Ready`, or `CapacityExhausted`"),
    "release_decode": ({}, "`null`; the oldest outstanding decode reservation goes back"),
    "reserve_destination": (
        {"owner": "u63", "tokens": "[u32]"},
        "`{transferable_prompt_tokens, uncached_prompt_tokens}`, or `CapacityExhausted`",
    ),
    "activate_destination": ({"owner": "u63"}, "`null`; the transfer landed: the request runs"),
    "cancel_destination": ({"owner": "u63"}, "`null`; the reservation goes back"),
    "counts": ({}, "`{num_active_blocks, num_inactive_blocks, num_active_block_refs}`"),
}

OPERATIONS["g1_native"] = {
    **_G1_COMMON,
    "allocate": (
        {"owner": "u63", "reuse?": "boolean"},
        "`Ready(n)` (n blocks newly allocated) or `CapacityExhausted`; `reuse` authorises the cached "
        "prefix, at most `(len-1)//block_size` blocks",
    ),
    "finalize": ({"owner": "u63"}, "`null`; everything pushed is computed (Stored per newly visible run)"),
    "deref_in_order": ({"owner": "u63"}, "the Deref's result, blocks named in table order"),
}
OPERATIONS["g1_kvbm"] = {
    **_G1_COMMON,
    "new_request": (
        {"owner": "u63", "tokens": "[u32] (at most 4096)", "caching?": "boolean"},
        "`null`; `caching` false gives random hashes",
    ),
    "reserve_destination": (
        {"owner": "u63", "tokens": "[u32]", "caching?": "boolean"},
        "`{transferable_prompt_tokens, uncached_prompt_tokens}`, or `CapacityExhausted`",
    ),
    "allocate": ({"owner": "u63"}, "`Ready(n)` or `CapacityExhausted`"),
    "decode_push": ({"owner": "u63", "token": "u32"}, "as `push`, through the outstanding decode reservation"),
    "resend": ({"owner": "u63"}, "the Use's result: the request's held blocks named again"),
    "bad_use": ({"kind": "dup_partial|hash_two_plhs"}, "a malformed Use's result (a panic)"),
    "bad_deref": ({"owner": "u63"}, "the request's Deref with an unknown block at the end (a panic)"),
}

# the events each component emits, and how they compare
EVENTS: dict[str, str] = {
    "kv_manager": (
        "`{Store: {blocks: [u64], parent_hash: u64|null}}` and `{Remove: {blocks: [u64]}}` in emission "
        "order; compared exactly"
    ),
    "lru_evictor_counter": "none (`events` is `[]`)",
    "lru_evictor_wallclock": "none (`events` is `[]`)",
    "kvbm_block_registry": (
        "`{kind: Register|Remove, sequence_hash: u64, tier: Device|HostPinned|Disk|null, handle: int, batch: int}` "
        "— `tier` is `null` in the untiered revisions (1.0.2, 403dd259: the wire event has none); `batch` is the "
        "0-based index, within the step, of the event-manager message the event belongs to (one message per "
        "`publish`, one per released registration); `handle` names the registration handle and is compared up "
        "to a one-to-one renaming kept over the whole workload (number them any way you like, consistently); "
        "every other field exactly"
    ),
    "g1_native": (
        "Dynamo's `KvCacheEvent`s (`{event_id, data: {stored: {...}} | {removed: {block_hashes}} | "
        "{cleared: {}}, dp_rank}`) as the publisher sends them; none when `publishers` is false; compared exactly"
    ),
    "g1_kvbm": "as g1_native; compared exactly",
}

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
        "operations": {op: {"args": a, "returns": r} for op, (a, r) in OPERATIONS[component].items()},
        "events": EVENTS[component],
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
    for name in OPERATIONS:
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
        for op, (args, ret) in OPERATIONS[name].items():
            a = ", ".join(f"`{k}`: {v}" for k, v in args.items()) or "none"
            out.append(f"| `{op}` | {a.replace('|', '&#124;')} | {ret.replace('|', '&#124;')} |")
        out += ["", f"**Events**: {EVENTS[name]}", "", "**Errors** (name → id):", ""]
        for k, v in error_catalogue(name).items():
            out.append(f"* {_code(k)}" + ("" if k == v else f" → {_code(v)}"))
        out.append("")
    return "\n".join(out)
