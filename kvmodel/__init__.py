"""kvmodel — an executable, formally checked model of NVIDIA Dynamo's KV-cache block management.

Sub-packages: ``kvmodel.model`` (state machines), ``kvmodel.invariants`` (the declared
catalogue), ``kvmodel.specs`` (Z3 encodings). This package holds the machinery: the
systems that pair a model with its monitor and invariants, traces, vectors and the CLI.
"""

__version__ = "0.1.0"
