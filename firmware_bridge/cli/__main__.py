"""``python -m firmware_bridge.cli`` is the ``edgelearn`` command."""

import sys

from . import main

if __name__ == "__main__":  # pytest's doctest collection imports this module too
    sys.exit(main())
