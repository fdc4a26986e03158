"""Same input, same bytes out: Hypothesis runs must not depend on what else was imported.

Hypothesis (6.13x+) mixes into generation a pool of literal constants scanned from every
*local* module loaded so far (``hypothesis.internal.conjecture.providers``). Which of our
modules (and test modules) happen to be loaded then changes the draws of a seeded run:
``machines.run(seed=0)`` found a counterexample or not depending on whether the router's
conformance module had been imported before. :func:`pin` makes that pool empty and fixed,
so a seed alone determines a run. It touches a Hypothesis internal, guarded: if the
internal changes, nothing is patched and :func:`pinned` says so (a test checks it).
"""

from __future__ import annotations

from typing import Any

_PINNED = False


def pin() -> bool:
    """Freeze Hypothesis's local-constants pool to empty (idempotent). True when pinned."""
    global _PINNED
    if _PINNED:
        return True
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - a Hypothesis without this module
        return False
    if not hasattr(providers, "_get_local_constants") or not hasattr(providers, "Constants"):
        return False
    # A fresh empty pool: the module's own may already hold constants gathered by an earlier
    # @given test in the same process (that made a seeded run's shrinking depend on which test
    # files ran before it).
    empty: Any = getattr(providers, "Constants")()  # noqa: B009 - not re-exported for mypy

    def no_local_constants() -> Any:
        return empty

    providers._get_local_constants = no_local_constants
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if cache is not None and hasattr(cache, "cache"):
        cache.cache.clear()
    _PINNED = True
    return True


def pinned() -> bool:
    return _PINNED
