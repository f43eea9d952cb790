"""The apps' own error: bad input named by field and rule.

The apps never import the provider (they run on clusters that have only pyspark and this zip); the
provider's CLI and tasks show this error's one-line message as they show their own.
"""

from __future__ import annotations

SHOWN_VALUE_LIMIT = 200
"""A refused value is quoted up to this many characters: the error stays one readable line."""


class SparkAppInputError(ValueError):
    """An argument, rules file or input path breaks a rule; raised before any Spark job runs."""

    def __init__(self, field: str, rule: str, value: object = None) -> None:
        self.field = field
        self.rule = rule
        self.value = value
        text = repr(value)
        text = text if len(text) <= SHOWN_VALUE_LIMIT else text[: SHOWN_VALUE_LIMIT - 1] + "…"
        shown = "" if value is None else f" (got {text})"
        super().__init__(f"{field}: {rule}{shown}")
