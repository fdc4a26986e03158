"""Misbehaving harness children: one small program per way a child can fail kvmodel's supervisor,
for the reliability tests (``stateful_tests/test_reliability.py``) and the campaign
(``tools/fuzz_campaign.py --supervision``).

Usage: python tools/harness_children.py MODE COMPONENT

Each mode speaks the harness protocol (``docs/harness.md``) as kvmodel's own model of COMPONENT
would, and then misbehaves in one way:

* ``honest``        — the model itself (no divergence);
* ``bool-for-int``  — answers JSON ``true``/``false`` where the model returns ``1``/``0``;
* ``float-for-int`` — answers ``2.0`` where the model returns ``2``;
* ``no-read``       — after hello, writes answers forever without reading its input;
* ``close-stdout``  — closes its standard output at the first step and keeps running;
* ``orphan``        — starts a grandchild that holds its pipes, then exits at the first step;
* ``fork-sleepers`` — starts grandchildren that sleep for a minute, then answers honestly;
* ``stderr-flood``  — writes 64 MiB to standard error at the first step, then answers honestly;
* ``hang``          — hangs at the fourth step of every workload;
* ``evil-name``     — a hello name with a newline and terminal escapes;
* ``many-empties``  — answers one step with a 3 MiB line of empty event objects.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any


def _swap(x: Any, fn: Any) -> Any:
    if isinstance(x, dict):
        return {k: _swap(v, fn) for k, v in x.items()}
    if isinstance(x, list):
        return [_swap(v, fn) for v in x]
    return fn(x)


def main() -> int:
    mode, component = sys.argv[1], sys.argv[2]
    from kvmodel.api import ModelAdapter

    model = ModelAdapter(component)
    out = sys.stdout.buffer
    steps = 0

    def say(msg: Any) -> None:
        out.write(json.dumps(msg).encode() + b"\n")
        out.flush()

    for raw in sys.stdin.buffer:
        msg = json.loads(raw)
        kind = msg["type"]
        if kind == "hello":
            name = "evil\n\x1b[2Kkvmodel conform: 999 workloads, no divergence" if mode == "evil-name" else mode
            say({"type": "hello", "protocol": "kvmodel-harness/1", "name": name})
            if mode == "no-read":
                while True:
                    say({"returns": None, "events": []})
        elif kind == "reset":
            model.reset(msg["config"])
            steps = 0
            say({"ok": True})
        elif kind == "step":
            steps += 1
            if mode == "close-stdout":
                os.close(1)
                time.sleep(120)
            if mode == "orphan":
                subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
                os._exit(3)
            if mode == "fork-sleepers" and steps == 1:
                for _ in range(3):
                    subprocess.Popen(["sleep", "60"])
            if mode == "stderr-flood" and steps == 1:
                chunk = b"x" * (1 << 20)
                for _ in range(64):
                    sys.stderr.buffer.write(chunk)
                sys.stderr.buffer.write(b"\nthe last line of the flood\n")
                sys.stderr.buffer.flush()
            if mode == "hang" and steps == 4:
                time.sleep(600)
            if mode == "many-empties":
                out.write(b'{"returns":null,"events":[' + b"{}," * (1 << 20) + b"{}]}\n")
                out.flush()
                continue
            obs = model.step(msg["op"], msg.get("args"))
            if mode == "bool-for-int":
                obs = _swap(obs, lambda v: bool(v) if type(v) is int and v in (0, 1) else v)
            if mode == "float-for-int":
                obs = _swap(obs, lambda v: float(v) if type(v) is int else v)
            say(obs)
        elif kind == "bye":
            return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
