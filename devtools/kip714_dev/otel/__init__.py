"""A real OpenTelemetry Collector reading the telemetry topic: build manifest, configuration, check."""
