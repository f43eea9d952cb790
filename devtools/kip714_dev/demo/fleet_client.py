"""One real librdkafka client of the demo fleet, run as its own process.

Each behaviour is what an operator would troubleshoot: a steady client, a consumer whose processing
slows (poll idle ratio falls, poll interval climbs), a producer whose record queue time spikes
(bursts against a broker-side byte-rate quota). Stops cleanly on SIGTERM so librdkafka sends its
final, terminating telemetry push.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import threading
import time
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer

log = logging.getLogger("kip714.fleet")


class ClientBehaviour(StrEnum):
    STEADY_PRODUCER = "steady-producer"
    BURSTY_PRODUCER = "bursty-producer"
    STEADY_CONSUMER = "steady-consumer"
    SLOW_CONSUMER = "slow-consumer"
    JAVA_PRODUCER = "java-producer"


@dataclass(frozen=True)
class ClientSpec:
    client_id: str
    behaviour: ClientBehaviour
    topic: str
    group_id: str | None = None
    messages_per_s: float = 20.0
    extra_config: dict[str, Any] = field(default_factory=dict)
    kill_after_s: float | None = None
    """Killed with SIGKILL this long after it starts: no terminating push (a silent client to find)."""

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ClientSpec:
        data = json.loads(text)
        data["behaviour"] = ClientBehaviour(data["behaviour"])
        return cls(**data)


class _StopFlag:
    def __init__(self) -> None:
        self.stopped = False
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)

    def _stop(self, *_: object) -> None:
        self.stopped = True


def run_producer(spec: ClientSpec, bootstrap: str, stop: _StopFlag) -> None:
    config = {"bootstrap.servers": bootstrap, "client.id": spec.client_id, "linger.ms": 5}
    config.update(spec.extra_config)
    producer = Producer(config)
    payload = b"x" * (2048 if spec.behaviour is ClientBehaviour.BURSTY_PRODUCER else 200)
    sent = 0
    period = 1.0 / spec.messages_per_s
    burst_every_s, burst_size = 30.0, 600
    next_burst = time.monotonic() + 10.0
    while not stop.stopped:
        if spec.behaviour is ClientBehaviour.BURSTY_PRODUCER and time.monotonic() >= next_burst:
            for _ in range(burst_size):
                _produce(producer, spec.topic, payload)
            sent += burst_size
            next_burst = time.monotonic() + burst_every_s
            log.info("%s: burst of %d records queued", spec.client_id, burst_size)
        _produce(producer, spec.topic, payload)
        sent += 1
        producer.poll(period)
    log.info("%s: stopping after %d records", spec.client_id, sent)
    producer.flush(10)


def _produce(producer: Producer, topic: str, payload: bytes) -> None:
    while True:
        try:
            producer.produce(topic, payload)
            return
        except BufferError:
            producer.poll(0.1)


def run_consumer(spec: ClientSpec, bootstrap: str, stop: _StopFlag) -> None:
    config = {
        "bootstrap.servers": bootstrap,
        "client.id": spec.client_id,
        "group.id": spec.group_id or f"{spec.client_id}-group",
        "auto.offset.reset": "latest",
        "enable.auto.commit": True,
    }
    config.update(spec.extra_config)
    consumer = Consumer(config)
    consumer.subscribe([spec.topic])
    started = time.monotonic()
    consumed = 0
    while not stop.stopped:
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error() and message.error().code() != KafkaError._PARTITION_EOF:
            log.warning("%s: %s", spec.client_id, message.error())
            continue
        consumed += 1
        if spec.behaviour is ClientBehaviour.SLOW_CONSUMER:
            # Processing gets slower the longer it runs: 5 ms per record at first, up to 1.5 s.
            time.sleep(min(1.5, 0.005 + (time.monotonic() - started) / 120.0))
    log.info("%s: stopping after %d records", spec.client_id, consumed)
    consumer.close()


def _kill_later(spec: ClientSpec) -> None:
    """SIGKILL this process after ``kill_after_s``: librdkafka gets no chance to send its final push."""

    def kill() -> None:
        log.info("%s: killing myself with SIGKILL (no terminating push)", spec.client_id)
        logging.shutdown()
        os.kill(os.getpid(), signal.SIGKILL)

    timer = threading.Timer(spec.kill_after_s or 0.0, kill)
    timer.daemon = True
    timer.start()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--spec", required=True, help="ClientSpec as JSON")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    spec = ClientSpec.from_json(args.spec)
    stop = _StopFlag()
    if spec.kill_after_s is not None:
        _kill_later(spec)
    if spec.behaviour in (ClientBehaviour.STEADY_PRODUCER, ClientBehaviour.BURSTY_PRODUCER):
        run_producer(spec, args.bootstrap_server, stop)
    elif spec.behaviour in (ClientBehaviour.STEADY_CONSUMER, ClientBehaviour.SLOW_CONSUMER):
        run_consumer(spec, args.bootstrap_server, stop)
    else:
        raise SystemExit(f"{spec.behaviour} is not a librdkafka client")


if __name__ == "__main__":
    main()
