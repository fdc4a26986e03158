"""The SGLang side of ``kvmodel conform --target sglang-radix-cache``: SGLang 0.5.23's real prefix
caches driven in their own interpreter (the SGLang venv ``tools/install-sglang.sh`` builds), over
kvmodel's harness protocol (:mod:`kvmodel.harness`: newline-delimited JSON on stdin/stdout).

Run by path with that venv's interpreter (``python -I .../sglang_worker.py``): it imports nothing
of kvmodel, only the standard library, torch and SGLang. The caches (``sglang/srt/mem_cache/``):

* ``unified-rust``: ``UnifiedRadixCache`` with the Rust TreeCore (the 0.5.23 scheduler's default,
  ``mem_cache/registry.py``); ``unified-python``: the same with the Python TreeCore;
* ``radix``: the classic ``RadixCache`` (``radix_cache.py``).

Each over SGLang's real allocator on device ``"cpu"`` (``TokenToKVPoolAllocator`` for page size 1,
``PagedTokenToKVPoolAllocator`` above) with ``kvcache=None`` and KV events on. Requests:

* ``reset`` config ``{cache, page_size, size, format, lora_names}``: a new cache (``format``:
  ``default`` or ``dynamo``, SGLang's ``dynamo_kv_event_format``; ``lora_names``: ``[extra_key,
  name]`` pairs registered with the cache's ``kv_event_lora_names``, as the scheduler registers a
  LoRA request's namespace);
* ``insert`` ``{tokens, ns}``: the page-aligned key's slots allocated (``"no_room"`` when the
  allocator has too few), then ``insert``; ``RadixCache`` leaves the duplicate prefix's slots to
  the caller (its ``_insert_cache`` frees them), so they are freed here; ``UnifiedRadixCache``
  frees them itself. Returns ``prefix_len``;
* ``match`` ``{tokens, ns}``: ``match_prefix``'s ``device_prefix_len``;
* ``lock`` ``{tokens, ns}``: ``match_prefix`` then ``inc_lock_ref`` on its last node; returns a
  handle; ``unlock`` ``{handle}``: ``dec_lock_ref`` with the receipt;
* ``evict`` ``{num_tokens}``: ``evict``'s ``num_tokens_evicted``;
* ``flush``: what the scheduler's cache flush does — ``reset()`` and the allocator cleared;
* ``versions``: SGLang's and torch's versions and the TreeCore backend;
* ``probe`` ``{keys: [[tokens, ns], ...]}``: ``match_prefix`` of each (the router comparison).

``ns`` is ``[extra_key, cache_salt]`` (each a string or null). Every answer carries the events
``take_events()`` returned, as SGLang's own msgspec encoding turns them into builtins (tagged
maps, ``None`` optionals omitted), and a ``state``: the allocator's free slots, the evictable and
protected sizes, the Rust-or-Python backend, and ``wire``: the batch as SGLang's publisher
encodes it (msgpack of ``KVEventBatch``, base64; ``ts`` is the step number, for determinism).
"""

from __future__ import annotations

import base64
import enum
import importlib
import importlib.machinery
import json
import sys
import types
from array import array
from typing import Any

PROTOCOL = "kvmodel-harness/1"
# what the worker uses of SGLang 0.5.23, and where it lives
NAMES = {
    "KVEventBatch": "sglang.srt.disaggregation.kv_events",
    "PagedTokenToKVPoolAllocator": "sglang.srt.mem_cache.allocator.paged",
    "TokenToKVPoolAllocator": "sglang.srt.mem_cache.allocator.token",
    "EvictParams": "sglang.srt.mem_cache.base_prefix_cache",
    "InsertParams": "sglang.srt.mem_cache.base_prefix_cache",
    "MatchPrefixParams": "sglang.srt.mem_cache.base_prefix_cache",
    "CacheInitParams": "sglang.srt.mem_cache.cache_init_params",
    "RadixCache": "sglang.srt.mem_cache.radix_cache",
    "RadixKey": "sglang.srt.mem_cache.radix_cache",
    "ComponentType": "sglang.srt.mem_cache.unified_cache.component_type",
    "UnifiedRadixCache": "sglang.srt.mem_cache.unified_radix_cache",
}


def install_torchvision_stub() -> None:
    """SGLang's import chain (``mem_cache.memory_pool`` → ``sglang.srt.configs``) imports
    ``torchvision.transforms`` at module level; PyPI's torchvision wheels are CUDA builds that do
    not load against torch's CPU build, and the cache path never calls torchvision. A stub
    module whose every attribute is a function that raises; transformers must first have cached
    that torchvision is absent."""
    if "torchvision" in sys.modules:
        return
    from transformers.utils import import_utils

    import_utils.is_torchvision_available()

    def _getattr(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)

        def missing(*a: Any, **k: Any) -> Any:
            raise RuntimeError(f"torchvision stub (kvmodel): {name} is not available")

        return missing

    names = ("torchvision", "torchvision.transforms", "torchvision.transforms.functional")
    tv, tr, fn = (types.ModuleType(n) for n in names)
    setattr(fn, "InterpolationMode", enum.Enum("InterpolationMode", "NEAREST BILINEAR BICUBIC"))  # noqa: B010
    for m in (tv, tr, fn):
        m.__spec__ = importlib.machinery.ModuleSpec(m.__name__, None)
        m.__getattr__ = _getattr  # type: ignore[method-assign]
    tv.__path__, tr.__path__ = [], []
    tv.transforms, tr.functional = tr, fn  # type: ignore[attr-defined]
    sys.modules.update({m.__name__: m for m in (tv, tr, fn)})


class Worker:
    def __init__(self) -> None:
        self.sg: dict[str, Any] | None = None
        self.cache: Any = None
        self.handles: dict[int, Any] = {}
        self.next_handle = 0
        self.seq = 0

    def _import(self) -> dict[str, Any]:
        if self.sg is None:
            install_torchvision_stub()
            sg: dict[str, Any] = {m: importlib.import_module(m) for m in ("msgspec", "sglang", "torch")}
            sg["torch"].set_num_threads(1)  # else each allocator torch.cat costs ~10 ms on 2 cores
            for name, module in NAMES.items():
                sg[name] = getattr(importlib.import_module(module), name)
            self.sg = sg
        return self.sg

    def reset(self, config: dict[str, Any]) -> None:
        sg = self._import()
        torch = sg["torch"]
        kind, ps, size = config["cache"], int(config["page_size"]), int(config["size"])
        if ps == 1:
            alloc = sg["TokenToKVPoolAllocator"](size, torch.float16, "cpu", None, False)
        else:
            alloc = sg["PagedTokenToKVPoolAllocator"](size, ps, torch.float16, "cpu", None, False)
        params = sg["CacheInitParams"](
            disable=False,
            req_to_token_pool=None,
            token_to_kv_pool_allocator=alloc,
            page_size=ps,
            enable_kv_cache_events=True,
            dynamo_kv_event_format=config.get("format") == "dynamo",
        )
        for extra_key, name in config.get("lora_names", []):  # a LoRA name for the extra key's events
            params.kv_event_lora_names.register(types.SimpleNamespace(extra_key=extra_key, lora_id="0" * 32), name)
        if kind == "radix":
            cache = sg["RadixCache"](params)
            backend = "radix"
        else:
            params.tree_components = (sg["ComponentType"].FULL,)
            params.tree_core_backend = kind.split("-", 1)[1]
            cache = sg["UnifiedRadixCache"](params)
            backend = cache._tree_core_backend
            if backend != params.tree_core_backend:  # the Rust core falls back to Python silently
                raise RuntimeError(f"asked for the {params.tree_core_backend} TreeCore, got {backend}")
        self.cache, self.alloc, self.kind, self.ps, self.backend = cache, alloc, kind, ps, backend
        self.handles.clear()
        self.next_handle = self.seq = 0
        cache.take_events()  # the constructor's own reset() publishes an AllBlocksCleared

    def _key(self, tokens: list[int], ns: list[Any]) -> Any:
        assert self.sg is not None
        return self.sg["RadixKey"](array("q", tokens), extra_key=ns[0], cache_salt=ns[1])

    def _match(self, tokens: list[int], ns: list[Any]) -> Any:
        assert self.sg is not None
        return self.cache.match_prefix(self.sg["MatchPrefixParams"](key=self._key(tokens, ns)))

    def step(self, op: str, a: dict[str, Any]) -> Any:
        sg = self.sg
        assert sg is not None
        if op == "insert":
            key = self._key(a["tokens"], a["ns"])
            n = len(key.page_aligned(self.ps))
            if n > self.alloc.available_size():
                return "no_room"
            torch = sg["torch"]
            value = self.alloc.alloc(n) if n else torch.empty(0, dtype=torch.int64)
            if value is None:
                return "no_room"
            res = self.cache.insert(sg["InsertParams"](key=key, value=value))
            if self.kind == "radix" and res.prefix_len:
                self.alloc.free(value[: res.prefix_len])
            return int(res.prefix_len)
        if op == "match":
            return int(self._match(a["tokens"], a["ns"]).device_prefix_len)
        if op == "lock":
            m = self._match(a["tokens"], a["ns"])
            receipt = self.cache.inc_lock_ref(m.last_device_node)
            self.next_handle += 1
            self.handles[self.next_handle] = (m.last_device_node, receipt)
            return self.next_handle
        if op == "unlock":
            node, receipt = self.handles.pop(a["handle"])
            self.cache.dec_lock_ref(node, receipt.to_dec_params())
            return None
        if op == "evict":
            return int(self.cache.evict(sg["EvictParams"](num_tokens=a["num_tokens"])).num_tokens_evicted)
        if op == "flush":
            self.cache.reset()
            self.alloc.clear()
            self.handles.clear()
            return None
        if op == "versions":
            return {"sglang": sg["sglang"].__version__, "torch": sg["torch"].__version__, "backend": self.backend}
        if op == "probe":
            return [int(self._match(t, ns).device_prefix_len) for t, ns in a["keys"]]
        raise ValueError(f"unknown operation {op!r}")

    def answer(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        sg = self.sg
        try:
            out: dict[str, Any] = {"returns": self.step(op, args)}
        except Exception as e:  # SGLang raised: the harness reports it as the step's error
            out = {"error": f"{type(e).__name__}: {e}"}
        assert sg is not None
        evs = self.cache.take_events()
        self.seq += 1
        wire = sg["msgspec"].msgpack.encode(sg["KVEventBatch"](ts=float(self.seq), events=evs, attn_dp_rank=0))
        out["events"] = [sg["msgspec"].to_builtins(e) for e in evs]
        out["state"] = {
            "free": int(self.alloc.available_size()),
            "evictable": int(self.cache.evictable_size()),
            "protected": int(self.cache.protected_size()),
            "backend": self.backend,
            "wire": base64.b64encode(wire).decode(),
        }
        return out


def self_check() -> int:
    """``--self-check``: every cache kind once (an insert, a match, an evict, a flush); prints the
    versions and the events, and builds SGLang's C++ hash extension on first use."""
    import time

    for kind in ("unified-rust", "unified-python", "radix"):
        t = time.monotonic()
        w = Worker()
        w.reset({"cache": kind, "page_size": 4, "size": 64, "format": "default"})
        tokens = list(range(100, 118))
        steps = [("insert", {"tokens": tokens, "ns": [None, None]}), ("match", {"tokens": tokens, "ns": [None, None]})]
        steps += [("evict", {"num_tokens": 64}), ("flush", {}), ("versions", {})]
        answers = [w.answer(op, a) for op, a in steps]
        if any("error" in a for a in answers) or answers[0]["returns"] != 0 or answers[1]["returns"] != 16:
            print(f"{kind}: FAILED {answers}")
            return 1
        v = answers[-1]["returns"]
        n = sum(len(a["events"]) for a in answers)
        took = time.monotonic() - t
        print(f"{kind}: sglang {v['sglang']} (torch {v['torch']}, {v['backend']} core): {n} events, {took:.1f} s")
    return 0


def main() -> int:
    if sys.argv[1:] == ["--self-check"]:
        return self_check()
    w = Worker()
    out = sys.stdout
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            reply: dict[str, Any] = {"type": "hello", "protocol": PROTOCOL, "name": "sglang"}
        elif kind == "reset":
            w.reset(msg["config"])
            reply = {"ok": True}
        elif kind == "step":
            reply = w.answer(msg["op"], msg.get("args") or {})
        elif kind == "bye":
            return 0
        else:
            reply = {"error": f"unknown message {kind!r}"}
        out.write(json.dumps(reply, separators=(",", ":")) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
