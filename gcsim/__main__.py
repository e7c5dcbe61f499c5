"""``python -m gcsim`` runs the command line (see :mod:`gcsim.app.cli`)."""

import sys

from .app.cli import main

sys.exit(main())
