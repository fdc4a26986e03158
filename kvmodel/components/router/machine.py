"""The router's Hypothesis machine: one rule per action class over a three-worker, three-hash
world with a tokens-hash conflict, blocks of up to three per Stored and probes of three."""

from __future__ import annotations

from kvmodel.components.router.actions import ACTIONS, world

RouterMachine = ACTIONS.machine(
    "RouterMachine", world(workers=3, hashes=3, conflict=True, max_blocks=3, probe_length=3)
)
