"""Command groups of the ``gcsim`` command line (each module has ``register(sub, add)``)."""
