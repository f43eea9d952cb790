"""Reading the telemetry topic and landing it exactly once."""
