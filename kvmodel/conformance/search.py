"""One seeded Hypothesis search for every differential runner (router, mocker, vLLM, the API).

:func:`failing_examples` draws ``workloads`` examples from a strategy with a fixed seed, calls
``diverges(example, shrinking)`` on each, and lets Hypothesis shrink the first one that
diverges; it returns every diverging example seen (the caller keeps the smallest). ``shrinking``
is True once a divergence was found, so callers count only the generated examples.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def failing_examples(strategy: Any, *, workloads: int, seed: int, diverges: Callable[[Any, bool], bool]) -> list[Any]:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis.errors import Flaky

    failing: list[Any] = []

    @settings(
        max_examples=workloads,
        database=None,
        deadline=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate, Phase.shrink],
    )
    @given(strategy)
    def check(example: Any) -> None:
        if diverges(example, bool(failing)):
            failing.append(example)
            raise AssertionError("divergence")

    check._hypothesis_internal_use_seed = seed
    try:
        check()
    except (AssertionError, Flaky):
        pass
    return failing
