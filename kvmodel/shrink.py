"""The one minimizer every counterexample goes through: greedy one-step deletion.

Traces (:func:`kvmodel.traces.minimize`), users' implementations (:mod:`kvmodel.api`) and the
conformance targets (the real ``RadixTree``, vLLM's ``BlockPool``) all shrink a failing sequence
of steps the same way: drop one step, re-run, keep the shorter sequence if it still fails, until
no single step can go. The result is 1-minimal with respect to the predicate. Runs are
deterministic, so each candidate is one re-run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def one_minimal(
    steps: Sequence[T], still_fails: Callable[[list[T]], list[T] | None], *, last_first: bool = False
) -> list[T]:
    """Delete single steps while ``still_fails(candidate)`` says the candidate still fails.

    ``still_fails`` returns ``None`` when the candidate does not fail, else the sequence to go on
    from — the candidate itself, or the part of it that ran up to the failure (a failure at step
    ``k`` makes every later step irrelevant). ``last_first`` tries deletions from the end first.
    After each successful deletion the scan starts again; the result is a sequence from which no
    single deletion still fails."""
    cur = list(steps)
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
