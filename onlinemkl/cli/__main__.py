"""``python -m onlinemkl.cli``: the ``onlinemkl`` command."""

import sys

from . import main

sys.exit(main())
