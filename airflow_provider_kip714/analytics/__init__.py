"""The analytics tables the Spark apps write: reading them, and their plots (report and UI)."""
