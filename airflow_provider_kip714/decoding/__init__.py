"""OTLP telemetry records to landing rows: header labels, protobuf/JSON parsing, Arrow columns, native fast path."""
