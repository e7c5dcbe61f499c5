"""The parts of ``scripts/mutation.py`` (mutation testing with mutmut): targets, classification, report."""
