"""Hypothesis budgets, defined once: ``kvmodel check --profile`` and the test suite
(``HYPOTHESIS_PROFILE``) read the same table.

* ``ci`` — 150 examples of 30 steps (``derandomize``: the same examples every run);
* ``deep`` — 3,000 examples of 60 steps.

A quirk's search in ``kvmodel check`` runs at least ``QUIRK_MIN_EXAMPLES`` examples (a defect
deep in the state space needs more than the ideal model's smoke run).
"""

from __future__ import annotations

import attrs

QUIRK_MIN_EXAMPLES = 1000


@attrs.frozen
class Profile:
    name: str
    max_examples: int
    steps: int
    derandomize: bool


PROFILES = {
    "ci": Profile("ci", max_examples=150, steps=30, derandomize=True),
    "deep": Profile("deep", max_examples=3000, steps=60, derandomize=False),
}


def register_hypothesis_profiles() -> None:
    """Register the profiles with Hypothesis (no deadline, no database, no health checks: the
    machines are slow by design and must be reproducible)."""
    from hypothesis import HealthCheck, settings

    for p in PROFILES.values():
        settings.register_profile(
            p.name,
            max_examples=p.max_examples,
            stateful_step_count=p.steps,
            deadline=None,
            derandomize=p.derandomize,
            database=None,
            suppress_health_check=list(HealthCheck),
            print_blob=True,
        )
