"""Stages of ``gcsim reproduce`` (each a function ``(out, full, seed, progress) -> summary``)."""
