"""The catalogue gcsim ships: named designs and encoders, each a manifest plus arrays.

This folder is package data (installed as ``gcsim.designs``); it holds no code. Read it with
:func:`gcsim.catalogue.named.packaged_catalogue`; ``designs/README.md`` describes the format.
"""
