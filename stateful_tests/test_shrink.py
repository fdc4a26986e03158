"""The one minimizer (``kvmodel/shrink.py``) every counterexample goes through."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kvmodel.shrink import one_minimal


def _has_subsequence(xs: list[int], sub: list[int]) -> bool:
    it = iter(xs)
    return all(any(x == s for x in it) for s in sub)


@given(st.lists(st.integers(0, 5), max_size=30), st.lists(st.integers(0, 5), min_size=1, max_size=4))
def test_the_result_still_fails_and_no_single_deletion_does(xs: list[int], sub: list[int]) -> None:
    """For a failure "contains ``sub`` as a subsequence", the result fails, is a subsequence of the
    input, and is 1-minimal (here: exactly ``sub``)."""
    xs = xs + sub  # the input fails
    for last_first in (False, True):
        got = one_minimal(xs, lambda c: c if _has_subsequence(c, sub) else None, last_first=last_first)
        assert _has_subsequence(got, sub) and _has_subsequence(xs, got)
        assert all(not _has_subsequence(got[:i] + got[i + 1 :], sub) for i in range(len(got)))
        assert got == sub


@given(st.lists(st.integers(0, 9), min_size=1, max_size=30))
def test_a_candidate_goes_on_as_what_ran_up_to_its_failure(xs: list[int]) -> None:
    """A failure at the first 7 truncates the candidate after it; the result is ``[7]``."""
    xs = [*xs, 7]

    def first_seven(c: list[int]) -> list[int] | None:
        return c[: c.index(7) + 1] if 7 in c else None

    assert one_minimal(xs, first_seven) == [7]


def test_nothing_is_deleted_when_every_deletion_passes() -> None:
    assert one_minimal([1, 2, 3], lambda c: c if len(c) == 3 else None) == [1, 2, 3]


@given(st.lists(st.integers(0, 5), max_size=12), st.integers(0, 5), st.integers(0, 5))
def test_pairs_mode_drops_a_set_up_with_the_step_it_enables(xs: list[int], a: int, b: int) -> None:
    """A failure "the last element is 9, or the sequence holds ``a`` and ``b`` at adjacent
    positions in that order followed by a 9": one-step deletion can stop at ``[a, b, 9]`` (neither
    ``a`` nor ``b`` goes alone when the pair is what makes it fail, and ``[9]`` needs both gone);
    with pairs the result is 2-minimal, so ``[9]``."""

    def fails(c: list[int]) -> list[int] | None:
        if not c or c[-1] != 9:
            return None
        body = c[:-1]
        ok = not body or any(body[i] == a and body[i + 1] == b for i in range(len(body) - 1))
        return c if ok else None

    start = [*xs, a, b, 9]
    got = one_minimal(start, fails, pairs_up_to=20)
    assert fails(got) is not None
    assert all(fails(got[:i] + got[i + 1 :]) is None for i in range(len(got)))
    assert all(fails(got[:i] + got[i + 1 : j] + got[j + 1 :]) is None for j in range(len(got)) for i in range(j))
    assert got == [9]
    # one-step deletion alone stops earlier: [a, b, 9] is 1-minimal
    assert one_minimal([a, b, 9], fails) == [a, b, 9]


@given(st.lists(st.integers(1, 4), min_size=1, max_size=12), st.integers(1, 12))
def test_merge_combines_adjacent_steps_deletion_cannot_shorten(xs: list[int], need: int) -> None:
    """Steps are amounts; a sequence fails when its total reaches ``need``. Deletion alone stops
    at a set whose every single deletion falls short; merging adjacent steps (their sum) keeps
    the total, so with a merge the result is one step."""
    xs = [*xs, need]  # the input fails

    def fails(c: list[int]) -> list[int] | None:
        return c if sum(c) >= need else None

    plain = one_minimal(xs, fails)
    assert sum(plain) >= need and all(sum(plain) - x < need for x in plain)
    merged = one_minimal(xs, fails, merge=lambda a, b: a + b)
    assert len(merged) == 1 and merged[0] >= need


def test_merge_is_tried_only_where_it_is_defined_and_kept_only_when_it_still_fails() -> None:
    """Deletion stops at two steps of 3 when 5 is needed; the merge (defined only for equal
    neighbours) makes the one step of 6 that fails; a merge that would not fail is not kept."""

    def fails(c: list[int]) -> list[int] | None:
        return c if any(x >= 5 for x in c) or c[-2:] == [3, 3] else None

    assert one_minimal([1, 3, 3], fails) == [3, 3]
    assert one_minimal([1, 3, 3], fails, merge=lambda a, b: a + b if a == b else None) == [6]
    never = one_minimal([1, 3, 3], lambda c: c if c[-2:] == [3, 3] else None, merge=lambda a, b: a + b)
    assert never == [3, 3]


@given(st.lists(st.integers(0, 5), max_size=40), st.integers(1, 3))
def test_near_mode_drops_a_set_up_and_its_undoing_in_a_long_sequence(xs: list[int], gap: int) -> None:
    """A failure "ends with 9, as many 1s as 2s, and every 1 followed by a 2 within ``gap``
    steps" (a request started and its freeing, each needed only by the other): one-step deletion
    keeps every pair; with ``near=gap`` they go, at any length, and the result is ``[9]``."""

    def fails(c: list[int]) -> list[int] | None:
        if not c or c[-1] != 9:
            return None
        body = c[:-1]
        paired = all(2 in body[i + 1 : i + 1 + gap] for i, x in enumerate(body) if x == 1)
        return c if paired and body.count(1) == body.count(2) else None

    start: list[int] = []
    for i, x in enumerate(x for x in xs if x not in (1, 2)):
        if i % 3 == 0:  # a pair 1 ... 2, ``gap`` apart
            start += [1, *[0] * (gap - 1), 2]
        start.append(x)
    start.append(9)
    assert fails(start) is not None
    assert one_minimal(start, fails, near=gap) == [9]
    assert one_minimal(start, fails).count(1) == start.count(1)  # without it, every pair stays
