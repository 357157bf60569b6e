"""``python -m onlinemkl``: the ``onlinemkl`` command (the same as ``python -m onlinemkl.cli``)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
