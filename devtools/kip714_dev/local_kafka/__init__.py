"""A real single-node Apache Kafka (KRaft, from Maven Central jars) for the CLI, the demo and tests."""
