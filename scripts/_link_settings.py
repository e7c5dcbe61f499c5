"""The emulated links' transport settings as command-line options, shared by the link scripts (theory §56.11)."""

from __future__ import annotations

import argparse

from gcsim.executor.netem import SHARING


def add_link_settings(parser: argparse.ArgumentParser) -> None:
    """Add ``--congestion`` and ``--sharing``, passed on to :class:`gcsim.executor.netem.NetemTopology`."""
    parser.add_argument(
        "--congestion",
        default=None,
        help="TCP congestion control of the rank namespaces, e.g. bbr or reno (default: the host's; "
        "recorded either way; theory §56.11)",
    )
    parser.add_argument(
        "--sharing",
        choices=SHARING,
        default=SHARING[0],
        help="the ports' queue behind the token bucket: one FIFO (default) or one per peer (theory §56.11)",
    )
