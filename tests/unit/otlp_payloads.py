"""Builders of real OTLP MetricsData payloads (opentelemetry-proto) and kip714 headers for tests."""

from __future__ import annotations

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.metrics.v1 import metrics_pb2 as m
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from airflow_provider_kip714.contract.topic import Header

INSTANCE_ID = "AAECAwQFBgcICQoLDA0ODw"  # Kafka Uuid text of 00010203-0405-0607-0809-0a0b0c0d0e0f
T0_NS = 1_763_800_000_000_000_000


def string_attr(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def int_attr(key: str, value: int) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(int_value=value))


def metrics_payload(*metrics: m.Metric, resource: Resource | None = None) -> bytes:
    """``metrics`` in one scope of one resource: the payload a test wants when only the metrics matter."""
    scope = m.ScopeMetrics(metrics=metrics)
    return m.MetricsData(
        resource_metrics=[m.ResourceMetrics(resource=resource, scope_metrics=[scope])]
    ).SerializeToString()


def client_headers(
    instance_id: str = INSTANCE_ID, client_id: str = "orders-1", **extra: str
) -> list[tuple[str, bytes]]:
    values = {
        Header.TYPE: "client",
        Header.CLIENT_INSTANCE_ID: instance_id,
        Header.CLIENT_ID: client_id,
        Header.CLIENT_SOFTWARE_NAME: "confluent-kafka-python",
        Header.CLIENT_SOFTWARE_VERSION: "2.16.1-rdkafka-2.16.0",
        Header.CLIENT_SOURCE_ADDRESS: "127.0.0.1",
        Header.CLIENT_SOURCE_PORT: "50123",
        Header.PRINCIPAL: "User:ANONYMOUS",
        Header.LISTENER: "PLAINTEXT",
        Header.NODE_ID: "1",
        Header.CLUSTER_ID: "cluster-abc",
        Header.TERMINATING: "false",
        Header.PUSH_INTERVAL_MS: "1000",
        Header.SUBSCRIPTION_ID: "-12345",
    }
    values.update(extra)
    return [(str(name), value.encode()) for name, value in values.items()]


def broker_headers(node_id: int = 1) -> list[tuple[str, bytes]]:
    return [
        (str(Header.TYPE), b"broker"),
        (str(Header.NODE_ID), str(node_id).encode()),
        (str(Header.CLUSTER_ID), b"cluster-abc"),
    ]


def producer_like_payload(points: int = 10, seed: int = 0, time_ns: int = T0_NS) -> bytes:
    """Shape of a librdkafka producer push: gauges + one delta monotonic sum, int node.id attributes.

    ``time_ns`` is the points' time (a fixed ``T0_NS`` by default; a load that is rolled up passes now).
    """
    metrics = []
    for index in range(points - 1):
        gauge = m.Gauge(
            data_points=[
                m.NumberDataPoint(
                    time_unix_nano=time_ns + seed,
                    as_double=float(index + seed) + 0.5,
                    attributes=[int_attr("node.id", index % 3)],
                )
            ]
        )
        metrics.append(m.Metric(name=f"org.apache.kafka.producer.metric{index}.avg", gauge=gauge))
    total = m.Sum(
        aggregation_temporality=m.AGGREGATION_TEMPORALITY_DELTA,
        is_monotonic=True,
        data_points=[
            m.NumberDataPoint(
                start_time_unix_nano=time_ns - 10**9, time_unix_nano=time_ns + seed, as_int=seed + 7
            )
        ],
    )
    metrics.append(m.Metric(name="org.apache.kafka.producer.connection.creation.total", sum=total))
    return metrics_payload(*metrics)


def every_kind_payload() -> bytes:
    """One metric of each of the five OTLP point kinds, with every attribute value type."""
    attrs = [
        string_attr("s", "text"),
        int_attr("i", -3),
        KeyValue(key="d", value=AnyValue(double_value=2.5)),
        KeyValue(key="b", value=AnyValue(bool_value=True)),
        KeyValue(
            key="a",
            value=AnyValue(
                array_value=ArrayValue(values=[AnyValue(int_value=1), AnyValue(string_value="x")])
            ),
        ),
        KeyValue(
            key="kv",
            value=AnyValue(
                kvlist_value=KeyValueList(values=[KeyValue(key="k", value=AnyValue(bool_value=False))])
            ),
        ),
    ]
    metrics = [
        m.Metric(
            name="g",
            unit="ms",
            gauge=m.Gauge(
                data_points=[m.NumberDataPoint(time_unix_nano=T0_NS, as_double=1.25, attributes=attrs)]
            ),
        ),
        m.Metric(
            name="s.cumulative",
            sum=m.Sum(
                aggregation_temporality=m.AGGREGATION_TEMPORALITY_CUMULATIVE,
                is_monotonic=False,
                data_points=[
                    m.NumberDataPoint(start_time_unix_nano=T0_NS - 5, time_unix_nano=T0_NS, as_int=0)
                ],
            ),
        ),
        m.Metric(
            name="h",
            histogram=m.Histogram(
                aggregation_temporality=m.AGGREGATION_TEMPORALITY_DELTA,
                data_points=[
                    m.HistogramDataPoint(
                        time_unix_nano=T0_NS,
                        count=6,
                        sum=30.0,
                        min=1.0,
                        max=12.0,
                        bucket_counts=[1, 2, 3],
                        explicit_bounds=[5.0, 10.0],
                    )
                ],
            ),
        ),
        m.Metric(
            name="eh",
            exponential_histogram=m.ExponentialHistogram(
                aggregation_temporality=m.AGGREGATION_TEMPORALITY_CUMULATIVE,
                data_points=[
                    m.ExponentialHistogramDataPoint(
                        time_unix_nano=T0_NS,
                        count=4,
                        sum=8.0,
                        scale=2,
                        zero_count=1,
                        positive=m.ExponentialHistogramDataPoint.Buckets(offset=-1, bucket_counts=[1, 2]),
                        negative=m.ExponentialHistogramDataPoint.Buckets(offset=0, bucket_counts=[0]),
                    )
                ],
            ),
        ),
        m.Metric(
            name="su",
            summary=m.Summary(
                data_points=[
                    m.SummaryDataPoint(
                        time_unix_nano=T0_NS,
                        count=2,
                        sum=3.0,
                        quantile_values=[
                            m.SummaryDataPoint.ValueAtQuantile(quantile=0.5, value=1.0),
                            m.SummaryDataPoint.ValueAtQuantile(quantile=0.99, value=2.0),
                        ],
                    )
                ],
            ),
        ),
    ]
    from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope

    data = m.MetricsData(
        resource_metrics=[
            m.ResourceMetrics(
                resource=Resource(attributes=[string_attr("group_id", "g1"), int_attr("port", 9092)]),
                scope_metrics=[
                    m.ScopeMetrics(
                        scope=InstrumentationScope(
                            name="librdkafka", version="2.16.0", attributes=[int_attr("x", 1)]
                        ),
                        metrics=metrics,
                    )
                ],
            )
        ]
    )
    return data.SerializeToString()
