"""``python -m lab`` is the ``lab`` command."""

import sys

from lab.cli import main

sys.exit(main())
