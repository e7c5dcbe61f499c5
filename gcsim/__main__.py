"""``python -m gcsim`` runs the command line (see :mod:`gcsim.app.cli`)."""

import sys

try:  # a Ctrl-C while the command line is imported: one line and status 130, as after start-up
    from .app.cli import main
except KeyboardInterrupt:
    print("gcsim: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
