"""Verdicts and exit codes, the same for every command and every output format.

* 0 ``pass``: every verdict was reached and is the expected one (no violation, everything
  proved, every quirk reproduced, no divergence);
* 1 ``violation``: a counterexample exists (an invariant violated, a divergence, a quirk not
  reproduced, a mutant surviving);
* 2 ``error``: bad usage, a bad input file, or an engine or harness error: nothing was decided;
* 3 ``inconclusive``: no verdict (a solver timeout or unknown, a counterexample to induction, a
  search that stopped at a bound, a run that executed nothing).

A command that gathers several results exits with the most severe present, in the order
violation (1), error (2), inconclusive (3), pass (0): a counterexample is never hidden behind an
error, and nothing short of a reached verdict is ever 0. Text, ``--json``, JUnit and HTML report
the same verdicts (JUnit: ``failure`` for a violation, ``error`` for an error or an inconclusive
result).
"""

from __future__ import annotations

from collections.abc import Iterable

PASS, VIOLATION, ERROR, INCONCLUSIVE = "pass", "violation", "error", "inconclusive"
EXIT = {PASS: 0, VIOLATION: 1, ERROR: 2, INCONCLUSIVE: 3}
VERDICTS = tuple(EXIT)


def worst(verdicts: Iterable[str]) -> str:
    """The verdict a gathering command reports: violation > error > inconclusive > pass. An
    empty gathering decided nothing: inconclusive."""
    vs = set(verdicts)
    if not vs:
        return INCONCLUSIVE
    for v in (VIOLATION, ERROR, INCONCLUSIVE):
        if v in vs:
            return v
    return PASS


def exit_code(verdicts: Iterable[str]) -> int:
    return EXIT[worst(verdicts)]


def of_status(status: str) -> str:
    """The verdict of one Z3 property result."""
    if status in ("proved", "holds"):
        return PASS
    if status == "violated":
        return VIOLATION
    return INCONCLUSIVE
