"""``python -m kvmodel``: the ``kvmodel`` command (for a venv whose scripts are not on ``PATH``)."""

from kvmodel.cli import entry

entry()
