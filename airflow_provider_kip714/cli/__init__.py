"""The ``kip714`` command line."""
