"""A worked example for ``docs/api.md``: *your* KVBM block registry, checked against kvmodel.

``MyRegistryWorld`` is a port of the block registry of dynamo-llm 1.0.2
(``lib/llm/src/block_manager/block/registry.rs`` with ``block/state.rs`` and ``events.rs``) as a
user would write it to test their own registry: plain classes, reference counts standing in for
Rust's ``Arc``s, one event list. It follows the registry *as it should be* — kvmodel's ideal model:
the global registry keyed by (hash, tier), a registration's death clearing its global entry, a
cloned publisher starting empty. ``BUGS`` lists planted one-line mistakes
(``MyRegistryAdapter(bug=...)``) that the differential check finds.

Run it: ``python examples/my_registry.py``.
"""

from __future__ import annotations

import struct
from typing import Any

import xxhash

BUGS = {
    "is_registered_ignores_liveness": "is_registered is true for an entry whose block handle is gone",
    "commit_ignores_salt": "commit hashes the tokens without the salt",
    "drain_erases_live_entry": "the unregister task erases an entry that was registered again",
    "publish_reversed": "publish announces the pending handles last first",
    "take_handle_forgets": "take_handle does not keep the handle for publication",
    "add_tokens_returns_count": "add_tokens returns how many tokens did not fit, not the tokens",
    "global_key_untiered": "the global registry is keyed by the hash alone",
    "pop_tokens_what_it_can": "pop_tokens pops what there is instead of refusing",
    "drop_publisher_silently": "dropping a publisher with pending handles announces nothing",
    "death_keeps_global_entry": "a registration that dies stays in the global registry and is reused",
}


class Rejected(Exception):
    """The registry refused an operation; ``kind`` is kvmodel's name for the error."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class Registration:
    """``RegistrationHandle`` and its Arc count."""

    def __init__(self, number: int, block: dict[str, Any], tier: str) -> None:
        self.number, self.block, self.tier, self.count = number, block, tier, 0


class State:
    """``BlockState``: Reset, Partial, Complete or Registered."""

    def __init__(self, kind: str = "Reset", block: dict[str, Any] | None = None) -> None:
        self.kind, self.block = kind, block
        self.tokens: list[int] = []
        self.page_size = self.salt = 0
        self.reg: Registration | None = None
        self.handle: list[Any] | None = None  # [pool, hash, alive]


class Pool:
    def __init__(self, tier: str, global_name: str) -> None:
        self.tier, self.global_name = tier, global_name
        self.blocks: dict[int, list[Any]] = {}  # hash -> block handle [pool, hash, alive]
        self.pending: list[int] = []


class MyRegistryWorld:
    def __init__(self, registries: list[list[str]], bug: str | None = None) -> None:
        self.bug = bug
        self.pools: dict[str, Pool] = {}
        self.globals: dict[str, dict[Any, Registration]] = {}
        self.values: dict[str, Any] = {}
        self.numbers = 0
        self.auto = 0
        self.events: list[dict[str, Any]] = []
        self.messages = 0
        for r in registries:
            self.new_registry(r[0], r[1], r[2] if len(r) > 2 else "G")

    # -- plumbing
    def _name(self, name: str | None, prefix: str, value: Any) -> str:
        if name is None:
            self.auto += 1
            while f"{prefix}{self.auto}" in self.values or f"{prefix}{self.auto}" in self.pools:
                self.auto += 1
            name = f"{prefix}{self.auto}"
        self.values[name] = value
        return name

    def _message(self, kind: str, regs: list[Registration]) -> None:
        for r in regs:
            self.events.append(
                {
                    "kind": kind,
                    "sequence_hash": r.block["hash"],
                    "tier": r.tier,
                    "handle": r.number,
                    "batch": self.messages,
                }
            )
        self.messages += 1

    def _release(self, reg: Registration) -> None:
        reg.count -= 1
        if reg.count == 0:
            self._message("Remove", [reg])
            if self.bug != "death_keeps_global_entry":
                for g in self.globals.values():
                    for k in [k for k, v in g.items() if v is reg]:
                        del g[k]

    def _publish(self, regs: list[Registration]) -> None:
        if regs:
            self._message("Register", regs[::-1] if self.bug == "publish_reversed" else regs)
            for r in regs:
                self._release(r)

    def _key(self, pool: Pool, h: int) -> Any:
        return h if self.bug == "global_key_untiered" else (h, pool.tier)

    # -- registries
    def new_registry(self, name: str, tier: str = "Device", global_name: str = "G") -> None:
        self.pools[name] = Pool(tier, global_name)
        self.globals.setdefault(global_name, {})

    def is_registered(self, pool: str, h: int) -> bool:
        bh = self.pools[pool].blocks.get(h)
        return bh is not None and (bh[2] or self.bug == "is_registered_ignores_liveness")

    def drain(self, pool_name: str) -> int | None:
        pool = self.pools[pool_name]
        if not pool.pending:
            return None
        h = pool.pending.pop(0)
        bh = pool.blocks.get(h)
        if bh is not None and (not bh[2] or self.bug == "drain_erases_live_entry"):
            del pool.blocks[h]
        g = self.globals[pool.global_name]
        reg = g.get(self._key(pool, h))
        if reg is not None and reg.count == 0:
            del g[self._key(pool, h)]
        return h

    # -- block states
    def _partial(self, name: str) -> State:
        st: State = self.values[name]
        if st.kind != "Partial":
            raise Rejected("StateNotPartial")
        return st

    def apply_token_block(self, name: str, block: dict[str, Any]) -> None:
        st: State = self.values[name]
        if st.kind != "Reset":
            raise Rejected("StateNotReset")
        st.kind, st.block = "Complete", block

    def initialize_sequence(self, name: str, page_size: int, salt: int) -> None:
        st: State = self.values[name]
        if st.kind != "Reset":
            raise Rejected("StateNotReset")
        st.kind, st.page_size, st.salt, st.tokens = "Partial", page_size % 2**32, salt, []

    def add_token(self, name: str, token: int) -> None:
        st = self._partial(name)
        if len(st.tokens) >= st.page_size:
            raise Rejected("TokenBlockFull")
        st.tokens.append(token)

    def add_tokens(self, name: str, tokens: list[int]) -> Any:
        st = self._partial(name)
        room = max(0, st.page_size - len(st.tokens))
        st.tokens += tokens[:room]
        return len(tokens[room:]) if self.bug == "add_tokens_returns_count" else tokens[room:]

    def pop_token(self, name: str) -> None:
        st = self._partial(name)
        if not st.tokens:
            raise Rejected("TokenBlockEmpty")
        st.tokens.pop()

    def pop_tokens(self, name: str, count: int) -> None:
        st = self._partial(name)
        if len(st.tokens) < count and self.bug != "pop_tokens_what_it_can":
            raise Rejected("TokenBlockInsufficient")
        del st.tokens[max(0, len(st.tokens) - count) :]

    def commit(self, name: str) -> None:
        st = self._partial(name)
        if len(st.tokens) != st.page_size:
            raise Rejected("TokenBlockIncomplete")
        data = struct.pack(f"<{len(st.tokens)}I", *st.tokens)
        h = xxhash.xxh3_64_intdigest(data, seed=0 if self.bug == "commit_ignores_salt" else st.salt)
        st.kind, st.block = "Complete", {"hash": h, "parent": None, "tokens": list(st.tokens)}
        st.tokens = []

    def state_query(self, name: str, query: str) -> Any:
        st: State = self.values[name]
        size = None if st.block is None or st.block.get("tokens") is None else len(st.block["tokens"])
        answers = {
            "len": {"Reset": 0, "Partial": len(st.tokens), "Complete": size, "Registered": None}[st.kind],
            "remaining": max(0, st.page_size - len(st.tokens)) if st.kind == "Partial" else 0,
            "is_empty": st.kind == "Reset" or (st.kind == "Partial" and not st.tokens),
            "tokens": list(st.tokens)
            if st.kind == "Partial"
            else (st.block or {}).get("tokens")
            if st.kind == "Complete"
            else None,
            "is_reset": st.kind == "Reset",
            "is_complete": st.kind in ("Complete", "Registered"),
            "is_registered": st.kind == "Registered",
        }
        return answers[query]

    # -- registration
    def register_block(self, pool_name: str, name: str, as_name: str | None) -> str | None:
        pool, st = self.pools[pool_name], self.values[name]
        if st.kind in ("Reset", "Partial"):
            raise Rejected("InvalidState")
        if st.kind == "Registered" or self.is_registered(pool_name, st.block["hash"]):
            raise Rejected("BlockAlreadyRegistered")
        h = st.block["hash"]
        bh = [pool_name, h, True]
        g = self.globals[pool.global_name]
        reg = g.get(self._key(pool, h))
        out = None
        if reg is not None and (reg.count > 0 or self.bug == "death_keeps_global_entry"):
            reg.count += 1
        else:
            self.numbers += 1
            reg = Registration(self.numbers, st.block, pool.tier)
            reg.count = 2  # the publish handle's Arc and the state's
            out = self._name(as_name, "ph", ["publish_handle", reg])
            g[self._key(pool, h)] = reg
        pool.blocks[h] = bh
        st.kind, st.reg, st.handle = "Registered", reg, bh
        return out

    def create_publish_handle(self, as_name: str | None, block: dict[str, Any], tier: str) -> str:
        self.numbers += 1
        reg = Registration(self.numbers, block, tier)
        reg.count = 1
        return self._name(as_name, "ph", ["publish_handle", reg])

    def remove_handle(self, ph: str, as_name: str | None) -> str:
        reg = self.values[ph][1]
        reg.count += 1
        return self._name(as_name, "arc", ["arc", reg])

    def take_handle(self, pub: str, ph: str, as_name: str | None) -> str | None:
        reg = self.values.pop(ph)[1]
        reg.count += 2  # the clone kept for publication, and the one returned
        if self.bug != "take_handle_forgets":
            self.values[pub][1].append(reg)
        else:
            reg.count -= 1
        self._release(reg)  # the publish handle, disarmed, goes
        if as_name is None:
            self._release(reg)
            return None
        return self._name(as_name, "arc", ["arc", reg])

    def publish(self, pub: str) -> None:
        regs, self.values[pub][1] = self.values[pub][1], []
        self._publish(regs)

    def drop(self, name: str) -> None:
        v = self.values.pop(name)
        if isinstance(v, State):
            if v.kind == "Registered":
                assert v.reg is not None and v.handle is not None
                self._release(v.reg)
                v.handle[2] = False
                self.pools[v.handle[0]].pending.append(v.handle[1])
        elif v[0] == "publish_handle":
            v[1].count += 1
            self._publish([v[1]])
            self._release(v[1])
        elif v[0] == "publisher":
            if self.bug == "drop_publisher_silently":
                for r in v[1]:
                    r.count -= 1
            else:
                self._publish(v[1])
        else:
            self._release(v[1])


def _block(b: dict[str, Any]) -> dict[str, Any]:
    return {"hash": b["hash"], "parent": b.get("parent"), "tokens": b.get("tokens")}


class MyRegistryAdapter:
    """The adapter: the registry's trace-format operations (``docs/contracts.md``) to calls."""

    def __init__(self, bug: str | None = None) -> None:
        self.bug = bug
        self.name = f"MyRegistry(bug={bug})" if bug else "MyRegistry"
        self.world = MyRegistryWorld([], bug)

    def reset(self, config: dict[str, Any]) -> None:
        self.world = MyRegistryWorld(config["registries"], self.bug)

    def step(self, op: str, a: dict[str, Any]) -> dict[str, Any]:
        w = self.world
        w.events, w.messages = [], 0
        try:
            if op == "new_registry":
                out: Any = w.new_registry(a["as"], a.get("tier", "Device"), a.get("global_registry", "G"))
            elif op == "new_state":
                out = w._name(a.get("as"), "state", State())
            elif op == "state_from_reset_apply_token_block":
                out = w._name(a.get("as"), "state", State("Complete", _block(a["block"])))
            elif op == "apply_token_block":
                out = w.apply_token_block(a["state"], _block(a["block"]))
            elif op == "initialize_sequence":
                out = w.initialize_sequence(a["state"], a["page_size"], a.get("salt", 0))
            elif op in ("add_token", "pop_token", "commit"):
                out = getattr(w, op)(a["state"], *([a["token"]] if op == "add_token" else []))
            elif op == "add_tokens":
                out = w.add_tokens(a["state"], a["tokens"])
            elif op == "pop_tokens":
                out = w.pop_tokens(a["state"], a["count"])
            elif op == "state_query":
                out = w.state_query(a["state"], a["query"])
            elif op == "register_block":
                out = w.register_block(a["registry"], a["state"], a.get("as"))
            elif op == "create_publish_handle":
                out = w.create_publish_handle(a.get("as"), _block(a["block"]), a.get("tier", "Device"))
            elif op == "remove_handle":
                out = w.remove_handle(a["publish_handle"], a.get("as"))
            elif op == "new_publisher":
                out = w._name(a.get("as"), "pub", ["publisher", []])
            elif op == "take_handle":
                out = w.take_handle(a["publisher"], a["publish_handle"], a.get("as"))
            elif op == "publish":
                out = w.publish(a["publisher"])
            elif op == "clone_publisher":
                out = w._name(a.get("as"), "pub", ["publisher", []])  # a clone starts empty
            elif op == "drop":
                out = w.drop(a["value"])
            elif op == "drain":
                out = w.drain(a["registry"])
            else:
                out = w.is_registered(a["registry"], a["hash"])
        except Rejected as e:
            return {"error": e.kind, "events": w.events}
        return {"returns": out, "events": w.events}


if __name__ == "__main__":
    from kvmodel.api import check_implementation

    print(check_implementation(MyRegistryAdapter(), "kvbm_block_registry").explain())
    for bug in BUGS:
        print(check_implementation(MyRegistryAdapter(bug), "kvbm_block_registry").explain().splitlines()[0])
