"""SGLang's real prefix caches (issue 60): ``kvmodel conform --target sglang-radix-cache``.

The model of what the cache promises (``kvmodel/components/sglang_cache/system.py``) is tested on
its own first (no SGLang needed): SGLang's hash recipe, the promises an evict must keep. Then
the real caches, in the SGLang venv ``tools/install-sglang.sh`` builds: each cache kind passes
at a fresh seed, the three agree, the namespace case is named with its witness, and a wrong
stand-in (SGLang's real cache with its events altered) fails with a shrunk trace that
``kvmodel replay`` reproduces."""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvmodel.components.sglang_cache.system import SglangCacheSystem, block_hashes
from kvmodel.systems import make_system

from .conftest import require

N = [None, None]
A = list(range(100, 118))  # four pages of 4 and half a page
B = A[:8] + list(range(508, 516))  # A's first two pages, then two of its own


def system(**config: Any) -> SglangCacheSystem:
    s = make_system("sglang_radix_cache", {"page_size": 4, "size": 64, **config}, [])
    assert isinstance(s, SglangCacheSystem)
    return s


def test_the_hash_recipe_is_sha256_chained_over_pages_as_u32_little_endian() -> None:
    # the first page's hash by hand: SHA-256 of the tokens as u32 LE, first 8 bytes big-endian
    want = int.from_bytes(hashlib.sha256(struct.pack("<4I", 100, 101, 102, 103)).digest()[:8], "big", signed=True)
    pages = ((100, 101, 102, 103), (104, 105, 106, 107))
    hs = block_hashes(pages, (None, None))
    assert hs[0] == want
    second = hashlib.sha256(hashlib.sha256(struct.pack("<4I", *pages[0])).digest() + struct.pack("<4I", *pages[1]))
    assert hs[1] == int.from_bytes(second.digest()[:8], "big", signed=True)
    # an extra_key alone does not enter the default format's hashes; a salt and the dynamo format do
    assert block_hashes(pages, ("tenant-a", None)) == hs
    assert block_hashes(pages, (None, "s")) != hs
    assert block_hashes(pages, ("tenant-a", None), "dynamo") != hs
    # a token past u32 is hashed as u64 after a 0xff tag
    wide = block_hashes(((1 << 40, 1, 2, 3),), (None, None))[0]
    tagged = hashlib.sha256(b"\xff" + b"".join(t.to_bytes(8, "little") for t in (1 << 40, 1, 2, 3)))
    assert wide == int.from_bytes(tagged.digest()[:8], "big", signed=True)


def test_a_lora_named_tenant_publishes_its_name_and_hashes_rekeyed_by_its_extra_key() -> None:
    s = system(lora_names=[["lora-a", "adapter-a"]])
    plain = next(e.to_json() for e in s.step("insert", {"tokens": A, "ns": N}).events)
    tenant = next(e.to_json() for e in s.step("insert", {"tokens": A, "ns": ["t", None]}).events)
    lora = next(e.to_json() for e in s.step("insert", {"tokens": A, "ns": ["lora-a", None]}).events)
    assert tenant["block_hashes"] == plain["block_hashes"] and "lora_name" not in tenant
    assert lora["lora_name"] == "adapter-a" and not set(lora["block_hashes"]) & set(plain["block_hashes"])
    # a malformed LoRA table is refused up front
    with pytest.raises(Exception, match="lora_names"):
        system(lora_names=[["lora-a"]])


def test_the_model_publishes_what_sglang_publishes_in_the_reference_scenario() -> None:
    s = system()
    o = s.step("insert", {"tokens": A, "ns": N})
    assert o.result == 0
    (ev,) = [e.to_json() for e in o.events]
    assert ev["block_hashes"][0] == -7118152853857507680 and len(ev["block_hashes"]) == 4
    assert ev["token_ids"] == A[:16] and ev["parent_block_hash"] is None  # the partial page is not stored
    o = s.step("insert", {"tokens": B, "ns": N})
    assert o.result == 8 and o.events[0].to_json()["parent_block_hash"] == ev["block_hashes"][1]
    assert s.step("lock", {"tokens": B, "ns": N}).result == 1
    assert s.snapshot() == {"free": 40, "evictable": 8, "protected": 16}
    o = s.step("evict", {"num_tokens": 1000, "victims": [[N, A[:12]]]})
    assert o.result == 8 and not o.violations
    assert o.events[0].to_json()["block_hashes"] == ev["block_hashes"][2:]
    assert s.step("flush", {}).events[0].to_json() == {"type": "AllBlocksCleared"}
    assert s.snapshot() == {"free": 64, "evictable": 0, "protected": 0}


@pytest.mark.parametrize(
    ("setup", "victims", "n", "broken"),
    [
        ([("insert", A), ("match", A[:8])], [A[:8]], 1000, "evicts_leaves"),  # the upper half, split off
        ([("insert", A), ("insert", B)], [A[:4]], 1000, "evicts_leaves"),  # a shared node above two leaves
        ([("insert", A), ("lock", A)], [A[:16]], 1000, "evicts_unlocked"),
        ([("insert", A), ("insert", B)], [A[:16], B[:16]], 4, "evicts_no_more"),
        ([("insert", A), ("insert", B)], [A[:16]], 1000, "evicts_enough"),
        ([("insert", A)], [B[:16]], 1000, "evicts_cached"),
    ],
)
def test_each_broken_promise_of_an_evict_is_a_violation(setup: Any, victims: Any, n: int, broken: str) -> None:
    s = system()
    for op, tokens in setup:
        s.step(op, {"tokens": tokens, "ns": N})
    o = s.step("evict", {"num_tokens": n, "victims": [[N, v] for v in victims]})
    assert broken in {v.invariant for v in o.violations}, o.violations


def test_the_rust_core_batches_removals_per_extra_key_and_the_python_caches_all_together() -> None:
    def removals(cache: str) -> list[list[int]]:
        s = system(cache=cache)
        for tokens, ns in ((A, N), (B, ["tenant-a", None]), (B, N)):
            s.step("insert", {"tokens": tokens, "ns": ns})
        victims = [[N, B[:16]], [["tenant-a", None], B[:16]], [N, A[:16]], [N, A[:8]]]
        o = s.step("evict", {"num_tokens": 1000, "victims": victims})
        return [e.to_json()["block_hashes"] for e in o.events]

    rust, python = removals("unified-rust"), removals("unified-python")
    assert [h for e in rust for h in e] == python[0] and len(python) == 1
    assert len(rust) == 3  # None's leaf, tenant-a's node, None's two nodes


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["insert", "match", "lock"]), st.integers(0, 2), st.integers(0, 1)), max_size=12)
)
def test_the_model_never_leaks_a_slot(ops: list[tuple[str, int, int]]) -> None:
    prompts = [A, B, A[:6]]
    s = system(size=32)
    for op, i, ns in ops:
        s.step(op, {"tokens": prompts[i], "ns": [None, None] if ns == 0 else ["t", None]})
        snap = s.snapshot()
        assert snap["free"] + snap["evictable"] + snap["protected"] == 32 and snap["free"] >= 0


# ---------------------------------------------------------------------------------- the real caches


@pytest.fixture(scope="module")
def sg() -> Any:
    from kvmodel.conformance import sglang

    why = sglang.available()
    if why:
        require(why)
    return sglang


@pytest.fixture(scope="module")
def workers(sg: Any) -> Iterator[dict[str, Any]]:
    pool = {k: sg.worker(k, 4, "default") for k in sg.CACHES}
    yield pool
    for w in pool.values():
        w.close()


@pytest.mark.parametrize("cache", ["unified-rust", "unified-python", "radix"])
def test_each_real_cache_agrees_with_the_model_the_stream_and_the_router(sg: Any, workers: Any, cache: str) -> None:
    out = sg.run(workloads=120, seed=20261207, cache=cache, workers=workers)
    assert out["divergences"] == 0, json.dumps(out.get("first_divergence"))[:2000]
    c = out["counts"]
    assert c["schedules"] == 120 and c["removed"] > 0 and c["locks"] > 0 and c["evictions"] > 0
    assert set(out["named_differences"]) <= {sg.NAMED}


def test_the_three_caches_answer_alike_up_to_how_removals_are_batched(sg: Any, workers: Any) -> None:
    out = sg.run(workloads=80, seed=7, cache="all", workers=workers)
    assert out["divergences"] == 0, json.dumps(out.get("first_divergence"))[:2000]
    assert out["engine"]["caches"] == list(sg.CACHES)


def test_the_namespace_case_is_named_with_its_witness(sg: Any, workers: Any) -> None:
    # the same prompt under the default namespace and a tenant; an evict takes one copy: SGLang still
    # serves the other, the router (one node for both) has dropped it
    s = sg.Schedule.from_json({"prompts": [[[0, 1], 0]], "ops": [["insert", 0, 0], ["insert", 0, 1], ["evict", 1]]})
    w = workers["unified-rust"]
    w.reset(w.config)
    r = sg.ScheduleRun(w, s, 4, "default")
    r.run()
    assert not r.failed()
    assert [d["name"] for d in r.router.named] == [sg.NAMED]
    d = r.router.named[0]
    assert d["router_blocks"] == 0 and d["engine_blocks"] == 2


class Altered:
    """SGLang's real cache with its events altered: a wrong stand-in."""

    def __init__(self, inner: Any, how: str) -> None:
        self.inner, self.how = inner, how
        self.config, self.versions = inner.config, inner.versions

    def reset(self, config: dict[str, Any]) -> None:
        self.inner.reset(config)

    def step(self, op: str, args: Any) -> dict[str, Any]:
        out: dict[str, Any] = self.inner.step(op, args)
        for e in out.get("events", []):
            if self.how == "root_first" and e["type"] == "BlockRemoved":
                e["block_hashes"].reverse()
            if self.how == "partial_page" and e["type"] == "BlockStored" and op == "insert":
                extra = args["tokens"][len(e["token_ids"]) :][:2] or [7]
                e["token_ids"] += extra
        return out


@pytest.mark.parametrize("how", ["root_first", "partial_page"])
def test_a_wrong_stand_in_fails_with_a_shrunk_trace_that_replay_reproduces(
    sg: Any, workers: Any, how: str, tmp_path: Path
) -> None:
    from kvmodel.traces import replay

    out = sg.run(workloads=100, seed=3, workers={"unified-rust": Altered(workers["unified-rust"], how)})
    assert out["divergences"] == 1
    assert len(out["counterexample"]["ops"]) <= 6, out["counterexample"]
    res = replay(out["trace"])
    assert res.verdict == "violation"
    assert res.divergence is not None or res.violation is not None


def test_a_missing_sglang_is_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch, capsys: Any, tmp_path: Path) -> None:
    from kvmodel.cli import main

    monkeypatch.setenv("KVMODEL_SGLANG_PYTHON", str(tmp_path / "no-python"))
    assert main(["conform", "--target", "sglang-radix-cache", "--workloads", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no SGLang interpreter" in err[0]


def test_sglang_options_go_with_the_sglang_target_only(capsys: Any) -> None:
    from kvmodel.cli import main

    assert main(["conform", "--target", "dynamo-radix-tree", "--cache", "radix"]) == 2
    assert "--cache" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["publisher", "indexer"])
def test_the_namespace_case_on_each_deployed_path(sg: Any, workers: Any, kind: str) -> None:
    """Issue 61: in the default format two tenants publish identical hashes, so the worker's
    publisher holds the one copy's Removed (its per-copy filter) and its router keeps the block;
    the standalone indexer drops it as the raw path does. Each real path agrees with its model."""
    from kvmodel.conformance import deployed

    why = deployed.available()
    if why:
        require(why)
    s = sg.Schedule.from_json({"prompts": [[[0, 1], 0]], "ops": [["insert", 0, 0], ["insert", 0, 1], ["evict", 1]]})
    w = workers["unified-rust"]
    relay = sg.PathRelay(kind, 4)
    try:
        w.reset(w.config)
        relay.start()
        r = sg.ScheduleRun(w, s, 4, "default", relay)
        r.run()
        assert not relay.divergences and not r.failed()
        assert [d["name"] for d in r.router.named] == [sg.NAMED]  # on the raw path
        assert (relay.behind, relay.differs) == ((0, 1) if kind == "publisher" else (1, 0))
    finally:
        relay.close()


@pytest.mark.parametrize(("kind", "workloads", "seed"), [("publisher", 200, 20261214), ("indexer", 40, 61)])
def test_generated_schedules_agree_with_each_deployed_path(
    sg: Any, workers: Any, kind: str, workloads: int, seed: int
) -> None:
    """The publisher path at issue 61's done-when size (200 schedules at a seed no development run
    used); the indexer path smaller."""
    out = sg.run(workloads=workloads, seed=seed, path=kind, workers=workers)
    assert out["workloads"] == workloads and out.get("verdict", "pass") == "pass"
    assert out["divergences"] == 0, json.dumps(out.get("first_divergence"))[:2000]
    assert out["path"] == kind and out["counts"]["probes"] > 0


def test_the_dynamo_formats_rehashed_tenant_is_named_with_its_witness(sg: Any) -> None:
    """In the ``dynamo`` format a tenant's hashes differ from the default namespace's for the
    same tokens; Dynamo's tree keeps the first hash a tokens node was stored under, so the
    tenant's block stored below its own hash is refused: SGLang serves the tenant 2 pages, the
    router 1 (1.6.1's RadixTree and the router model alike)."""
    s = sg.Schedule.from_json(
        {"prompts": [[[0], 0], [[0, 0], 0]], "ops": [["insert", 0, 0], ["insert", 0, 1], ["insert", 1, 1]]}
    )
    w = sg.worker("unified-rust", 4, "dynamo")
    try:
        r = sg.ScheduleRun(w, s, 4, "dynamo")
        r.run()
    finally:
        w.close()
    assert not r.failed()
    named = [d for d in r.router.named if d["name"] == sg.REHASHED]
    assert named and (named[0]["router_blocks"], named[0]["engine_blocks"]) == (1, 2)
