"""The application layer: the ``gcsim`` command line and ``gcsim reproduce``.

Nothing below this package imports it.  :mod:`gcsim.app.cli` builds the parser
from the ordered command groups in :mod:`gcsim.app.commands`; :mod:`gcsim.app.reproduce`
runs the ordered stages of :mod:`gcsim.app.stages`; :mod:`gcsim.app.common`
holds what every command shares (exit codes, typed flags, path checks, output).
"""
