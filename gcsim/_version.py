"""The version of gcsim: one place, read by the package, the bundle provenance and the build."""

__version__ = "0.1.0"
