"""``make compat``: the compatibility matrix, run against real software.

Brokers (the newest patch of each Apache Kafka line from 3.7), librdkafka releases (each in its own
throwaway venv of the confluent-kafka release that bundles it) and Java clients (kafka-clients from
Maven Central under the project's client harness) push through the broker plugin; what lands is read
back with the product's own landing. Also measures how each broker answers a push that is too large
once decompressed. Results: a table on stdout (docs/compatibility.md keeps a dated copy).
"""
