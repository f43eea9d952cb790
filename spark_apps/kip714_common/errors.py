"""The apps' own error: bad input named by field and rule.

When the provider is installed (the Airflow worker, the tests) it subclasses ``Kip714Error`` so callers can
catch every product error the same way; on a bare Spark cluster it falls back to ``ValueError`` alone.
"""

from __future__ import annotations

try:  # pragma: no branch - depends on where the app runs
    from airflow_provider_kip714.exceptions import Kip714Error as _ProductError
except ImportError:  # the cluster has only pyspark and this zip

    class _ProductError(Exception):  # type: ignore[no-redef]
        """Stand-in base class when the provider package is absent."""


class SparkAppInputError(_ProductError, ValueError):
    """An argument, rules file or input path breaks a rule; raised before any Spark job runs."""

    def __init__(self, field: str, rule: str, value: object = None) -> None:
        self.field = field
        self.rule = rule
        self.value = value
        shown = "" if value is None else f" (got {value!r})"
        super().__init__(f"{field}: {rule}{shown}")
