"""``python -m kvmodel``: the ``kvmodel`` command (for a venv whose scripts are not on ``PATH``)."""

import sys

from kvmodel.cli import main

sys.exit(main())
