"""Dynamo's deployed event paths, for real (issue 61): an engine socket in vLLM's wire format
through the worker's ``KvEventPublisher`` (relay mode) to an in-process ``KvRouter``, and through
the standalone ``python -m dynamo.indexer``; each step drained by a barrier and compared with
the router model fed the same messages through the modelled path (``model/publisher.py``)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from kvmodel.conformance import deployed
from kvmodel.model.publisher import DedupFilter

from .conftest import require

BS = 4
P = list(range(100, 112))  # three blocks
Q = [*P[:4], *range(200, 208)]  # P's first block, then two of its own
HP = [11, 12, 13]  # the engine's hashes of P's blocks
HQ = [11, 22, 23]


def stored(hashes: list[int], tokens: list[int], parent: int | None = None) -> dict[str, Any]:
    return {
        "type": "BlockStored",
        "block_hashes": hashes,
        "parent_block_hash": parent,
        "token_ids": tokens,
        "block_size": BS,
    }


def removed(*hashes: int) -> dict[str, Any]:
    return {"type": "BlockRemoved", "block_hashes": list(hashes)}


CLEARED = ["AllBlocksCleared"]

# a block cached twice (vLLM publishes each copy), its copies removed one at a time, then a reset
PER_COPY = [
    [stored(HP, P)],
    [stored(HP, P)],
    [removed(12)],
    [removed(12)],
    [stored(HP, P)],
    [stored(HP, P)],
    [CLEARED],
    [stored(HP, P)],
    [removed(13)],
]


@pytest.fixture(scope="module", params=["publisher", "indexer"])
def path(request: Any) -> Iterator[deployed.DeployedPath]:
    why = deployed.available()
    require(why is None, f"the deployed paths need the real wheel: {why}")
    with deployed.DeployedPath(request.param, BS) as p:
        yield p


def _run(p: deployed.DeployedPath, schedule: list[list[Any]], model: deployed.ModelPath) -> list[tuple[int, ...]]:
    """Each step on the real path and the model; the (real, model) overlaps of P and Q."""
    out = []
    for message in schedule:
        p.step(message)
        model.step(message)
        out.append((p.overlap(P), p.overlap(Q), model.overlap(P), model.overlap(Q)))
    p.step([CLEARED])  # the next test starts from an empty cache
    return out


def test_each_path_applies_per_copy_removals_as_its_model_says(path: deployed.DeployedPath) -> None:
    """The publisher lets a Removed through only when the last copy goes and a Cleared resets
    its counts; the standalone indexer drops a block at its first Removed. Each real path agrees
    with its model at every step."""
    got = _run(path, PER_COPY, deployed.ModelPath(path.kind, BS))
    assert [g[:2] for g in got] == [g[2:] for g in got]
    third = got[2][0]  # after the first of two copies' Removed
    assert third == (3 if path.kind == "publisher" else 1)


def test_the_raw_and_publisher_paths_differ_exactly_on_the_per_copy_steps() -> None:
    """The two models on the per-copy schedule: the same answers except while a second copy
    holds a block one copy's Removed named (the third step; after the Cleared has reset the
    counts, a single copy's Removed passes on both)."""
    pub, raw = deployed.ModelPath("publisher", BS), deployed.ModelPath("indexer", BS)
    differ = []
    for i, message in enumerate(PER_COPY):
        pub.step(message)
        raw.step(message)
        if pub.overlap(P) != raw.overlap(P):
            differ.append(i)
    assert differ == [2]


def _schedule(rnd: random.Random, n: int) -> list[list[Any]]:
    out: list[list[Any]] = []
    for _ in range(n):
        k = rnd.randrange(10)
        if k < 4:
            hashes, toks = (HP, P) if rnd.random() < 0.5 else (HQ, Q)
            m = rnd.randint(1, 3)
            out.append([stored(hashes[:m], toks[: m * BS])])
        elif k < 8:
            out.append([removed(*rnd.sample([11, 12, 13, 22, 23], rnd.randint(1, 2)))])
        elif k < 9:
            out.append([CLEARED])
        else:  # two events in one message: a second copy and a removal
            out.append([stored(HP[:2], P[:8]), removed(12)])
    return out


def test_random_schedules_agree_with_the_model_on_each_path(path: deployed.DeployedPath) -> None:
    """Stores (with copies), removals of stored and unknown blocks and resets over two prompts
    sharing a block: every step's overlaps equal the model's, on both paths (seeded)."""
    rnd = random.Random(61)
    for _ in range(8):
        got = _run(path, _schedule(rnd, 10), deployed.ModelPath(path.kind, BS))
        assert [g[:2] for g in got] == [g[2:] for g in got]


class _EarlyFilter(DedupFilter):
    """A wrong publisher: a Removed passes while one more copy is left."""

    def removed(self, dp_rank: int, hashes: Any, tier: str = "device", domain: str = "worker") -> tuple[int, ...]:
        counts = self.counts.setdefault((dp_rank, tier, domain), {})
        out = []
        for h in hashes:
            n = counts.pop(h, 0)
            if n > 2:
                counts[h] = n - 1
            else:
                out.append(h)
        return tuple(out)


@pytest.mark.parametrize("wrong", ["dedup_off", "removed_early"])
def test_a_wrong_publisher_model_is_told_apart_from_the_real_publisher(wrong: str) -> None:
    """The comparison sees the publisher's rules: a model with the dedup switched off, or one
    that lets a Removed through a copy early, disagrees with the real relay path."""
    why = deployed.available()
    require(why is None, f"the deployed paths need the real wheel: {why}")
    model = deployed.ModelPath("publisher", BS, dedup=wrong != "dedup_off")
    if wrong == "removed_early":
        assert model.publisher is not None
        model.publisher.filter = _EarlyFilter()
    with deployed.DeployedPath("publisher", BS) as p:
        got = _run(p, [*PER_COPY[:2], [stored(HP, P)], *PER_COPY[2:]], model)
    assert [g[:2] for g in got] != [g[2:] for g in got]


def test_a_path_that_stops_answering_is_no_verdict(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    """A barrier that never completes mid-run is a harness error: ``kvmodel conform`` exits 2
    with one line, never 0 or 1."""
    from kvmodel import cli
    from kvmodel.conformance import vllm_engine as ve

    why = ve.real_available() or deployed.available()
    require(why is None, str(why))

    real_drain, calls = deployed.DeployedPath.drain, [0]

    def stalls(self: deployed.DeployedPath) -> None:  # a few steps in, the path stops answering
        calls[0] += 1
        if calls[0] > 5:
            raise deployed.PathTimeout("the publisher path did not apply a barrier within 10.0 s")
        real_drain(self)

    monkeypatch.setattr(deployed.DeployedPath, "drain", stalls)
    rc = cli.main(["conform", "--target", "vllm-engine", "--path", "publisher", "--workloads", "2"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err and "did not apply a barrier" in err[-1]


def test_a_chain_restored_under_new_hashes_is_cut_on_the_publisher_path_only(path: deployed.DeployedPath) -> None:
    """Observed on ai-dynamo-runtime 1.6.1, not modelled: once a block's tokens were stored under
    one engine hash, a later chain that stores the same tokens under other hashes (as SGLang's
    ``dynamo`` event format does for two namespaces) is cut after the blocks the router already
    knew, even after an AllBlocksCleared, by ``KvRouter``'s default indexer (4 event threads: the
    concurrent radix tree; with ``router_event_threads=1`` the chain is whole); the standalone
    indexer and the ``RadixTree`` (and the router model) store the whole chain.
    ``docs/findings.md`` (SGLang) has it per path."""
    first = list(range(5000, 5004))
    chain = [*first, *range(5004, 5016)]
    path.step([stored([501], first)])
    path.step([CLEARED])
    assert path.overlap(chain) == 0
    path.step([stored([601, 602, 603, 604], chain)])
    model = deployed.ModelPath(path.kind, BS)
    for message in ([stored([501], first)], [CLEARED], [stored([601, 602, 603, 604], chain)]):
        model.step(message)
    assert model.overlap(chain) == 4
    assert path.overlap(chain) == (1 if path.kind == "publisher" else 4)
    path.step([CLEARED])


def test_a_batch_of_another_dp_rank_reaches_the_router_on_the_indexer_path_only(path: deployed.DeployedPath) -> None:
    """Observed on ai-dynamo-runtime 1.6.1: a ``KvEventPublisher`` advertises one dp rank (its
    ``dp_rank`` argument, 0 here), and the router drops a batch whose events name another rank
    ("payload disagrees with its source advertisement"); the standalone indexer applies it. So
    on the publisher path one publisher serves one rank, and the component's per-rank rules
    (``kv_event_publisher``) matter only across publishers' ranks."""
    toks = list(range(7000, 7004))
    path.step([stored([701], toks)], dp_rank=1)
    assert path.overlap(toks) == (0 if path.kind == "publisher" else 1)
    path.step([stored([701], toks)])
    assert path.overlap(toks) == 1
    path.step([CLEARED], dp_rank=1)
    path.step([CLEARED])


@pytest.mark.parametrize(("kind", "workloads", "seed"), [("publisher", 200, 20261214), ("indexer", 30, 61)])
def test_the_real_mockers_stream_through_each_path_agrees_with_its_model(kind: str, workloads: int, seed: int) -> None:
    """``kvmodel conform --target dynamo-mocker --path``: the real 1.6.1 mocker's events relayed
    through the path after its offline replay; the native pool publishes per hash, so no
    per-copy filtering happens and the path's view never differs from the raw path's. The
    publisher path at issue 61's done-when size (200 workloads, a seed no development run used)."""
    from kvmodel.conformance import mocker

    why = deployed.available() or mocker.available()
    require(why is None, f"the mocker path needs the real wheel: {why}")
    out = mocker.run(workloads=workloads, seed=seed, path=kind).to_json()
    assert out["verdict"] == "pass" and out["divergences"] == 0, out.get("first_divergence")
    assert out["path_events"] > 0 and out["path_differs_from_raw"] == 0
