"""A consumer group of three real librdkafka consumers, one of which slows down, plus a producer.

The live-mode tests need the same fleet: a traffic topic with three partitions (each consumer gets one),
a 1 s consumer-metrics subscription for the fleet's client ids, and the client specs. ``start`` creates
the topic and the subscription; the caller starts the clients (``ClientFleet``) and deletes the
subscription (``SlowingGroup.subscription``) when it is done.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from kip714_dev.demo.fleet_client import ClientBehaviour, ClientSpec

from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.subscriptions.model import Subscription


@dataclass
class SlowingGroup:
    prefix: str
    admin: ClientMetricsAdmin
    subscription: str
    steady: list[ClientSpec]
    slow: ClientSpec
    producer: ClientSpec

    @property
    def specs(self) -> list[ClientSpec]:
        return [*self.steady, self.slow, self.producer]

    @classmethod
    def start(cls, config: dict[str, Any], label: str) -> SlowingGroup:
        prefix = f"{label}-{uuid.uuid4().hex[:6]}"
        traffic = f"{prefix}-orders"
        topics = AdminClient(
            config
        )  # kept alive until the topic exists: a destroyed client fails its futures
        topics.create_topics([NewTopic(traffic, 3, 1)])[traffic].result(30)
        admin = ClientMetricsAdmin(to_kafka_python_kwargs(config))
        subscription = f"kip714-test-{prefix}"
        admin.upsert(
            Subscription.from_spec(
                subscription,
                metrics="org.apache.kafka.consumer.",
                interval_ms=1000,
                match=f"client_id={prefix}-.*",
            )
        )
        group = f"{prefix}-audit"
        return cls(
            prefix=prefix,
            admin=admin,
            subscription=subscription,
            steady=[
                ClientSpec(f"{prefix}-consumer-{n}", ClientBehaviour.STEADY_CONSUMER, traffic, group)
                for n in (1, 2)
            ],
            slow=ClientSpec(f"{prefix}-consumer-slow", ClientBehaviour.SLOW_CONSUMER, traffic, group),
            producer=ClientSpec(
                f"{prefix}-producer", ClientBehaviour.STEADY_PRODUCER, traffic, messages_per_s=30
            ),
        )

    def stop(self) -> None:
        self.admin.delete(self.subscription)
        self.admin.close()
