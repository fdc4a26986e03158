#!/usr/bin/env bash
# Install SGLang 0.5.23's real prefix caches into their own virtualenv (.venv-sglang beside this
# checkout, or $KVMODEL_SGLANG_VENV), for `kvmodel conform --target sglang-radix-cache` and its
# tests. Its own venv because SGLang's pins (transformers, openai, tokenizers) differ from vLLM's.
# --no-deps from the lock: sglang's own metadata would pull torch 2.14.1 and CUDA packages.
# About 2.5 minutes and 2.4 GB (triton alone is 1 GB). Then one run of the worker on every cache
# kind, which also builds SGLang's C++ hash extension once (about 20 s; the Rust TreeCore
# needs none).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${KVMODEL_SGLANG_VENV:-.venv-sglang}"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --no-deps -r requirements/sglang-sut.lock.txt 2>&1 | grep -v "WARNING: Location" || true
"$venv/bin/python" -I kvmodel/conformance/sglang_worker.py --self-check
