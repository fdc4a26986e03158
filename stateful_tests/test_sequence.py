"""The old ActiveSequence, alone and driving the KV manager the way the scheduler does."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, multiple, rule, run_state_machine_as_test

from kvmodel.components.kv_manager.system import KvManagerSystem
from kvmodel.model.blocks import FullBlock, PartialBlock, Use
from kvmodel.model.errors import BlockSizeTooSmall, GenerateLimit
from kvmodel.model.hashing import TokenBlockSequence
from kvmodel.model.sequence import ActiveSequence


@given(st.lists(st.integers(0, 9), max_size=40), st.lists(st.integers(0, 9), max_size=40), st.integers(2, 6))
def test_blocks_track_the_tokens(prompt: list[int], pushed: list[int], bs: int) -> None:
    """Full unique blocks carry the sequence hashes of the token blocks; promotion is one token late."""
    s = ActiveSequence(prompt, 1000, bs, True, name="s")
    for t in pushed:
        s.push(t)
        toks = TokenBlockSequence(prompt + pushed[: s.generated_tokens], bs, 1337)
        assert len(s.unique_blocks) == -(-len(s) // bs)
        for i, b in enumerate(s.unique_blocks):
            if isinstance(b, FullBlock):
                assert b.hash == toks.blocks[i].sequence_hash
        # only the last block may be partial; it is partial unless the length is a multiple of
        # bs right after creation, or was filled by the prompt
        assert all(isinstance(b, FullBlock) for b in s.unique_blocks[:-1])


def test_generate_limit_and_block_size() -> None:
    with pytest.raises(BlockSizeTooSmall):
        ActiveSequence([1], 1, 1)
    s = ActiveSequence([1], 1, 2)
    s.generate()
    with pytest.raises(GenerateLimit):
        s.generate()


def test_pop_at_boundary_drops_partial_without_signal() -> None:
    """§6 #10: pop() at a block boundary forgets the new partial, with no Destroy."""
    s = ActiveSequence(range(16), 10, 16, name="s")
    sig = s.push(16)
    assert sig is not None and isinstance(sig[-1], Use)
    s.pop()
    assert s.unique_blocks == [FullBlock(s.tokens.blocks[0].sequence_hash)]


def test_caching_off_uses_random_but_deterministic_hashes() -> None:
    a = ActiveSequence(range(32), 10, 16, False, name="a", seed=1)
    b = ActiveSequence(range(32), 10, 16, False, name="a", seed=1)
    c = ActiveSequence(range(32), 10, 16, False, name="c", seed=1)
    assert a.unique_blocks == b.unique_blocks != c.unique_blocks


class SequencesOnManager(RuleBasedStateMachine):
    """Requests as ActiveSequences sending their signals to the (ideal) manager, as the
    scheduler does: creation Use, decode signals, free at the end, preemption by reset.
    Tokens come from a two-letter alphabet with block size 2 so prefixes are shared.
    Live requests are a Bundle; finishing one consumes it."""

    quirks: Any = frozenset()
    requests = Bundle("requests")

    def __init__(self) -> None:
        super().__init__()
        self.sys = KvManagerSystem({"max_capacity": 6, "block_size": 2}, self.quirks)
        self.n = 0

    def send(self, sig: Any) -> Any:
        out = self.sys.apply("process", sig)
        assert out.error is None, f"{sig}: {out.error}"
        assert not out.violations, out.violations
        return out.result

    @rule(target=requests, prompt=st.lists(st.integers(0, 1), min_size=1, max_size=6))
    def admit(self, prompt: list[int]) -> Any:
        self.n += 1
        s, sig = ActiveSequence.new_with_signal(prompt, 6, 2, True, name=f"r{self.n}")
        assert sig is not None
        # a failed creation Use leaves nothing behind in the ideal model: the request is not admitted
        return s if self.send(sig) else multiple()

    @rule(s=requests, token=st.integers(0, 1))
    def decode(self, s: ActiveSequence, token: int) -> None:
        if s.generated_tokens >= s.max_output_tokens:
            return
        for sig in s.push(token) or []:
            if not self.send(sig):
                # the scheduler tolerates only a failed Use of one new partial: pop it back
                assert isinstance(sig, Use) and len(sig.blocks) == 1 and isinstance(sig.blocks[0], PartialBlock)
                s.pop()

    @rule(s=consumes(requests), preempt=st.booleans())
    def finish(self, s: ActiveSequence, preempt: bool) -> None:
        sigs = s.reset_with_signal() if preempt else s.free_signal()
        for sig in sigs:
            self.send(sig)


def test_sequences_keep_the_ideal_manager_invariants() -> None:
    run_state_machine_as_test(SequencesOnManager, settings=settings(max_examples=150))


def test_same_prompt_same_token_trips_promote_overwrite() -> None:
    """Two requests with one prompt decode the same token: the second Promote lands on the
    hash the first just promoted. Faithful: the refcount is overwritten (1, held 2), and
    when the first request frees, the block goes inactive while the second still uses it."""
    for quirks, expect_rc in ((frozenset(), 2), (frozenset({"promote_overwrites_refcount"}), 1)):
        sys_ = KvManagerSystem({"max_capacity": 8, "block_size": 16}, quirks)
        a, sa = ActiveSequence.new_with_signal(range(15), 10, 16, name="a")
        b, sb = ActiveSequence.new_with_signal(range(15), 10, 16, name="b")
        viol: list[str] = []
        for sig in (sa, sb, *(a.push(15) or []), *(a.push(16) or []), *(b.push(15) or []), *(b.push(16) or [])):
            viol += [v.invariant for v in sys_.apply("process", sig).violations]
        h = a.unique_blocks[0]
        assert h == b.unique_blocks[0]
        assert sys_.model.active[h] == expect_rc
        if expect_rc == 1:
            assert "kv.refcount_conservation" in viol
            for sig in a.free_signal():
                sys_.apply("process", sig)
            assert sys_.model.inactive.contains(h)  # evictable while b still holds it
        else:
            assert not viol


REACHABLE_FROM_REQUESTS = [
    "promote_always_stores",
    "promote_leaves_inactive_copy",
    "promote_overwrites_refcount",
    "use_non_atomic",
]


@pytest.mark.parametrize("quirk", REACHABLE_FROM_REQUESTS)
def test_quirk_reachable_from_ordinary_requests(quirk: str) -> None:
    """These defects need no API misuse: requests sharing prefixes under eviction pressure hit them."""
    machine = type("M", (SequencesOnManager,), {"quirks": frozenset({quirk})})
    with pytest.raises(AssertionError, match="Violation"):
        run_state_machine_as_test(machine, settings=settings(max_examples=300))
