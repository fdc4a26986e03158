"""The branch coverage a default ``check_implementation`` run reaches, per component, ideal and
faithful, with the run's seconds and those of the same run without the measurement
(``docs/api.md``'s table). Usage: ``python tools/coverage_figures.py [COMPONENT ...]``."""

from __future__ import annotations

import sys
import time

from kvmodel import api, components


def main(names: list[str]) -> None:
    for c in names or components.names(lambda c: c.api_world is not None):
        for q in ([], "faithful"):
            t = time.monotonic()
            r = api.check_implementation(api.ModelAdapter(c, q), c, quirks=q)
            with_cov = time.monotonic() - t
            t = time.monotonic()
            api.check_implementation(api.ModelAdapter(c, q), c, quirks=q, coverage=False)
            without = time.monotonic() - t
            cov = r.extra["coverage"]
            mode = "faithful" if q else "ideal"
            print(
                f"{c:24} {mode:9} {cov['taken']:4}/{cov['branches']:4} {cov['percent']:5} %  "
                f"{with_cov:5.1f}s (without: {without:5.1f}s)",
                flush=True,
            )
            for m, v in cov["modules"].items():
                print(f"    {m:36} {v['taken']}/{v['branches']} missed at lines {v['missed_lines']}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
