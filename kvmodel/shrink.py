"""The one minimizer every counterexample goes through: greedy one-step deletion.

Traces (:func:`kvmodel.traces.minimize`), users' implementations (:mod:`kvmodel.api`) and the
conformance targets (the real ``RadixTree``, vLLM's ``BlockPool``) all shrink a failing sequence
of steps the same way: drop one step, re-run, keep the shorter sequence if it still fails, until
no single step can go. The result is 1-minimal with respect to the predicate. Runs are
deterministic, so each candidate is one re-run.

A component may also say how two adjacent steps combine into one (``merge``; the KV manager: two
Uses into one Use of both lists): deletion alone cannot turn "Use 2 blocks, Use 3 blocks" into
"Use 5 blocks", which Hypothesis's shrinker does only when the block list can grow. A merge is a
candidate like any other — kept only if it still fails — so it cannot make a non-counterexample.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def one_minimal(
    steps: Sequence[T],
    still_fails: Callable[[list[T]], list[T] | None],
    *,
    last_first: bool = False,
    pairs_up_to: int = 0,
    near: int = 0,
    merge: Callable[[T, T], T | None] | None = None,
) -> list[T]:
    """Delete single steps while ``still_fails(candidate)`` says the candidate still fails.

    ``still_fails`` returns ``None`` when the candidate does not fail, else the sequence to go on
    from — the candidate itself, or the part of it that ran up to the failure (a failure at step
    ``k`` makes every later step irrelevant). ``last_first`` tries deletions from the end first.
    After each successful deletion the scan starts again; the result is a sequence from which no
    single deletion still fails.

    With ``pairs_up_to`` > 0, a result of at most that many steps is then also made 2-minimal:
    every pair of steps is tried for deletion (a step that is needed only because another one
    is there — a set-up and the step that undoes it — goes with it), and after a successful pair
    deletion single deletions are tried again. At most ``n·(n-1)/2`` re-runs per round.

    With ``near`` > 0, a sequence of any length is also cleared of pairs of steps at most
    ``near`` apart (a request started and freed, each step needed only by the other): about
    ``near·n`` re-runs per round.

    With ``merge``, each pair of adjacent steps that ``merge(a, b)`` combines (it returns ``None``
    where it does not) is tried as the one combined step, after deletions stop; after a
    successful merge deletions are tried again."""
    cur = list(steps)
    while True:
        cur = _singles(cur, still_fails, last_first)
        got = _pairs(cur, still_fails, near) if near else None
        if got is None and len(cur) <= pairs_up_to:
            got = _pairs(cur, still_fails)
        if got is None and merge is not None:
            got = _merges(cur, still_fails, merge)
        if got is None:
            return cur
        cur = got


def _merges(
    cur: list[T], still_fails: Callable[[list[T]], list[T] | None], merge: Callable[[T, T], T | None]
) -> list[T] | None:
    """The first candidate with two adjacent steps merged into one that still fails, or ``None``."""
    for i in range(len(cur) - 1):
        m = merge(cur[i], cur[i + 1])
        if m is not None:
            got = still_fails([*cur[:i], m, *cur[i + 2 :]])
            if got is not None:
                return list(got)
    return None


def _singles(cur: list[T], still_fails: Callable[[list[T]], list[T] | None], last_first: bool) -> list[T]:
    changed = True
    while changed:
        changed = False
        order = range(len(cur) - 1, -1, -1) if last_first else range(len(cur))
        for i in order:
            got = still_fails(cur[:i] + cur[i + 1 :])
            if got is not None:
                cur = list(got)
                changed = True
                break
    return cur


def _pairs(cur: list[T], still_fails: Callable[[list[T]], list[T] | None], gap: int = 0) -> list[T] | None:
    """The first candidate with two steps deleted (at most ``gap`` apart, when given) that still
    fails, or ``None``."""
    n = len(cur)
    for j in range(n - 1, 0, -1):
        for i in range(j - 1, max(-1, j - 1 - gap) if gap else -1, -1):
            got = still_fails(cur[:i] + cur[i + 1 : j] + cur[j + 1 :])
            if got is not None:
                return list(got)
    return None
