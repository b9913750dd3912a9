"""`python -m bench`: see bench.cli."""

import sys

from bench.cli import main

# Guarded: the spawned worker processes import this module again, as __mp_main__.
if __name__ == "__main__":
    sys.exit(main())
