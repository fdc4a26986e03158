"""The explorer's memory bound (``kvmodel.membound``, ``explore(..., max_memory=)``,
``kvmodel explore --max-memory``): a search past it stops, says so in text and JSON, and is
never a pass; sizes are parsed in full and refused in one line; a search the bound does not
stop is the search without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvmodel import cli, components, explore_workers, explorer, membound
from kvmodel.model.quirks import faithful

pytestmark = pytest.mark.skipif(not membound.readable(), reason="no /proc here: no memory bound is kept")

# the KVBM world with every quirk on: large (its exhaustive search runs past a million states)
KVBM = components.World({}, {})
# what differs from run to run
_RUN = ("seconds", "states_per_second", "bytes_per_state", "peak_rss_bytes", "workers", "workers_peak_rss_bytes")


def _space() -> object:
    return components.get("g1_kvbm").explore_space(KVBM)


def _under_now() -> int:
    """A bound this process is already past."""
    now = membound.resident_bytes(os.getpid())
    assert now is not None and now > membound.MIN_BOUND
    return now - 1


@pytest.mark.parametrize("workers", [1, 2])
def test_a_search_past_the_bound_stops_incomplete_and_is_not_a_pass(workers: int) -> None:
    if workers > 1 and not explore_workers.available():
        pytest.skip("no fork here")
    r = explorer.explore({}, [], _space(), max_states=2_000_000, max_memory=_under_now(), workers=workers)
    assert not r.complete and r.stopped_by == "memory" and not r.stopped_early
    assert r.memory_seen_bytes > r.max_memory_bytes > 0  # type: ignore[operator]
    assert r.verdict(expect_witnesses=True) == "inconclusive"
    out = r.to_json()
    assert out["stopped_by"] == "memory" and out["max_memory_bytes"] == r.max_memory_bytes
    line = r.describe(2_000_000, {})[0]
    assert "INCOMPLETE: stopped at the memory bound" in line and "--max-memory" in line
    # the watch is gone with the search
    assert not any(t.name == "kvmodel-memory-watch" for t in threading.enumerate())


# (workers, bound in MiB): some way above the CLI's starting size, one process or three (a
# worker's pages shared with the main process count in both)
PARTWAY = [(1, 100), (2, 400)]


@pytest.mark.parametrize(("workers", "mib"), PARTWAY, ids=["one-process", "two-workers"])
def test_the_bound_stops_a_growing_search_partway_with_its_counterexamples_kept(workers: int, mib: int) -> None:
    """A fresh ``kvmodel explore`` (its own process: the bound is on what it grows to) of the
    faithful KVBM world, whose exhaustive search runs past a million states, with a bound some
    way above its starting size: it stores states until it passes the bound, then stops (with
    workers, within a level, whose records are dropped); what it found by then is the unbounded
    search's (the same shortest counterexamples)."""
    if workers > 1 and not explore_workers.available():
        pytest.skip("no fork here")
    args = ["explore", "--component", "kvbm", "--faithful", "--exhaustive", "--json"]
    args += ["--max-memory", f"{mib}M", "--workers", str(workers)]
    run = subprocess.run([sys.executable, "-m", "kvmodel", *args], capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stderr  # counterexamples found before the stop: a violation
    out = json.loads(run.stdout)
    assert out["stopped_by"] == "memory" and not out["complete"] and out["max_memory_bytes"] == mib << 20
    assert out["workers"] == workers
    assert 1000 < out["states"] < 2_000_000 and out["violations"]
    quirks = sorted(faithful("g1_kvbm"))
    full = explorer.explore({}, quirks, _space(), max_states=out["states"])
    assert {k: v["depth"] for k, v in out["violations"].items()} == {
        k: v["depth"] for k, v in full.violations.items() if k in out["violations"]
    }


def test_a_search_the_bound_does_not_stop_is_the_search_without_it() -> None:
    sp = components.get("g1_native").explore_space(components.World({}, {}))
    a = explorer.explore({}, [], sp)
    b = explorer.explore({}, [], sp, max_memory=membound.physical_bytes())
    assert a.complete and b.complete and b.stopped_by is None
    ja, jb = a.to_json(), b.to_json()
    for k in _RUN:
        ja.pop(k), jb.pop(k)
    assert ja == jb and "max_memory_bytes" not in jb


@pytest.mark.parametrize("bad", [0, -1, 2.5, "6G", True])
def test_a_bound_that_is_no_number_of_bytes_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="max_memory"):
        explorer.explore({}, [], _space(), max_memory=bad)  # type: ignore[arg-type]


@given(st.integers(1, 4096), st.sampled_from(["K", "M", "G", "k", "m", "g", "MB", "MiB", "G "]))
def test_sizes_are_read_in_full(n: int, unit: str) -> None:
    text = f"{n}{unit}"
    want = n * membound.UNITS[unit.strip()[0].upper()]
    phys = membound.physical_bytes() or 0
    if want < membound.MIN_BOUND or want > phys:
        with pytest.raises(ValueError):
            membound.parse_size(text)
    else:
        assert membound.parse_size(text) == want


@given(
    st.text(max_size=60)
    | st.from_regex(r"\s*[0-9.]{0,40}\s*[kKmMgGtTbBiI]{0,3}\s*", fullmatch=True)
    | st.builds(lambda n, u: "9" * n + u, st.integers(1, 600), st.sampled_from(["", "K", "G", ".5T"]))
)
def test_any_text_is_a_size_in_range_or_a_value_error(text: str) -> None:
    """Whatever ``--max-memory`` is given, the answer is a size the machine has or a reason (never
    another exception: a number too long for a float once overflowed)."""
    try:
        n = membound.parse_size(text)
    except ValueError:
        return
    assert text.strip().lower() == "auto" or (
        n is not None and membound.MIN_BOUND <= n <= (membound.physical_bytes() or n)
    )


def test_auto_is_three_quarters_of_what_is_available() -> None:
    got = membound.parse_size("auto")
    avail = membound._meminfo("MemAvailable")
    assert got is not None and avail is not None
    assert 0.5 * avail < got <= avail


@pytest.mark.parametrize(
    "bad", ["", "abc", "-1G", "1X", "0", "1000", "1e9", "1..5G", "99999T", "auto2", "9" * 400, "1." + "5" * 400 + "G"]
)
def test_cli_refuses_a_bad_size_in_one_line(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["explore", "--component", "g1_native", "--max-memory", bad]) == 2
    cap = capsys.readouterr()
    err = cap.err.strip().splitlines()
    assert cap.out == "" and len(err) == 1 and "--max-memory" in err[0], err


def test_cli_reports_the_stop_in_text_and_json_with_the_inconclusive_exit(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["explore", "--component", "kvbm", "--ideal", "--max-memory", "1M"]
    assert cli.main(args) == 3
    text = capsys.readouterr().out
    assert "INCOMPLETE: stopped at the memory bound" in text and "no invariant violated" in text
    assert cli.main([*args, "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "inconclusive" and out["stopped_by"] == "memory" and not out["complete"]
    assert out["max_memory_bytes"] == 1 << 20 and out["memory_seen_bytes"] > 1 << 20
    # the default bound ('auto') does not stop the default world, and the JSON says how it stopped
    assert cli.main(["explore", "--component", "kvbm", "--ideal", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["complete"] and out["stopped_by"] is None
