"""``python -m firmware_bridge`` is the ``edgelearn`` command."""

import sys

from .cli import main

sys.exit(main())
