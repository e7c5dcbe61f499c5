"""Loaders for built-in kinds (filled once the classes exist)."""
