"""Shared library of the kip714 Spark apps: schemas, name/label normalisation, CLI, I/O.

Shipped to the cluster as a zip with ``--py-files`` (see ``spark_apps/package.py``); it depends only on
pyspark and the standard library so it runs wherever Spark runs, without the provider installed.
"""

from __future__ import annotations

__all__ = ["__version__"]
__version__ = "0.1.0"
