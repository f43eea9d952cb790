"""The contract every layer uses: the telemetry topic, the landing schemas, client identity and selectors."""
