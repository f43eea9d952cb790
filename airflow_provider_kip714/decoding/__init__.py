"""OTLP telemetry records to landing rows; the entry points are in ``decoder`` (see its docstring)."""
