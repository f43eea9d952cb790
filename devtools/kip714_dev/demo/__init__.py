"""The demo: a real client fleet on the local Kafka, and the end-to-end troubleshooting story."""
