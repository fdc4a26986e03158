"""Token-block hashing against the test constants and the real Dynamo binary.

The real parts (``ai-dynamo-runtime==1.6.1``): ``compute_block_hash_for_seq`` for local
block hashes, and the real mocker's Stored events for the chained sequence hashes.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvmodel.conformance import dynamo_runtime as real
from kvmodel.model.errors import InvalidInput
from kvmodel.model.hashing import TokenBlockSequence, block_hash, local_block_hashes, sequence_hashes

from .conftest import require


def test_registry_fixture_constants() -> None:
    seq = TokenBlockSequence(range(1, 11), 4, 1337)
    assert [b.block_hash for b in seq.blocks] == [14643705804678351452, 16777012769546811212]
    assert [b.sequence_hash for b in seq.blocks] == [14643705804678351452, 4945711292740353085]
    assert seq.current_block == [9, 10]
    assert block_hash([9, 10, 11, 12], 1337) == 483935686894639516
    seq.append(11)
    seq.append(12)
    assert seq.blocks[-1].sequence_hash == 12583592247330656132


def test_salt_none_means_zero() -> None:
    assert TokenBlockSequence([1, 2], 2).blocks[0].block_hash == block_hash([1, 2], 0)


@given(st.lists(st.integers(0, 2**32 - 1), max_size=80), st.integers(1, 20))
def test_sequence_append_pop_truncate_agree_with_rebuild(tokens: list[int], bs: int) -> None:
    s = TokenBlockSequence([], bs, 1337)
    for t in tokens:
        s.append(t)
    assert s.blocks == TokenBlockSequence(tokens, bs, 1337).blocks
    cut = len(tokens) // 2
    s.truncate(cut)
    assert s.blocks == TokenBlockSequence(tokens[:cut], bs, 1337).blocks
    assert s.tokens == tokens[:cut]


@pytest.mark.parametrize("bad", [[-1], [2**32], [1.5], [True]])
def test_bad_tokens_are_typed_errors(bad: list[object]) -> None:
    with pytest.raises(InvalidInput):
        TokenBlockSequence(bad, 4)  # type: ignore[arg-type]


def test_bad_block_size() -> None:
    with pytest.raises(InvalidInput):
        local_block_hashes([1, 2], 0)


@settings(max_examples=60)
@given(st.lists(st.integers(0, 2**32 - 1), max_size=200), st.sampled_from([1, 2, 4, 16, 64]))
def test_local_hashes_match_the_real_wheel(tokens: list[int], bs: int) -> None:
    require(real.available() is None, f"real Dynamo not usable: {real.available()}")
    assert local_block_hashes(tokens, bs) == real.compute_block_hash_for_seq(tokens, bs)


@settings(max_examples=8, deadline=None)
@given(st.lists(st.lists(st.integers(0, 40), min_size=16, max_size=80), min_size=1, max_size=3))
def test_sequence_hashes_match_the_real_mocker_events(prompts: list[list[int]]) -> None:
    """Every Stored block of the real mocker is (sequence hash, local hash) of a prompt prefix,
    its parent is the previous block's sequence hash, and every full prompt block is Stored."""
    require(real.available() is None, f"real Dynamo not usable: {real.available()}")
    events = real.mocker_kv_events(prompts, block_size=16, num_gpu_blocks=64, output_tokens=1)
    ours: dict[int, tuple[int, int | None]] = {}
    for p in prompts:
        local = local_block_hashes(p, 16)
        seqh = sequence_hashes(local)
        for i, (lh, sh) in enumerate(zip(local, seqh, strict=True)):
            ours[sh] = (lh, seqh[i - 1] if i else None)
    stored: set[int] = set()
    for ev in events:
        data = ev["data"]
        if "stored" not in data:
            continue
        parent = data["stored"]["parent_hash"]
        for b in data["stored"]["blocks"]:
            assert b["block_hash"] in ours, f"real block {b} is not a prompt block of ours"
            lh, want_parent = ours[b["block_hash"]]
            assert b["tokens_hash"] == lh
            assert parent == want_parent
            parent = b["block_hash"]
            stored.add(b["block_hash"])
    assert stored == set(ours)
