"""``python -m gcsim`` runs the command line (see :mod:`gcsim.cli`)."""
import sys

from .cli import main

sys.exit(main())
