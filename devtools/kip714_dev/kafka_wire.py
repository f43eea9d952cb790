"""A minimal synchronous Kafka protocol connection, built on ``kio``.

confluent-kafka and kafka-python cannot send the KIP-714 telemetry requests on demand, nor client
quotas; this speaks them directly, for diagnostics, tests and the demo. Plaintext listeners only.
"""

from __future__ import annotations

import io
import socket
import struct
from typing import Any, TypeVar

from kio.serial import entity_reader, entity_writer

from airflow_provider_kip714.exceptions import ClusterUnreachableError

_SIZE = struct.Struct(">i")
Response = TypeVar("Response")


class KafkaWireConnection:
    """One TCP connection to one broker; requests are sent and answered one at a time."""

    def __init__(self, host: str, port: int, client_id: str = "kip714-wire", timeout_s: float = 10.0) -> None:
        self.client_id = client_id
        self._correlation_id = 0
        try:
            self._sock = socket.create_connection((host, port), timeout=timeout_s)
        except OSError as err:
            raise ClusterUnreachableError(f"cannot connect to {host}:{port}: {err}") from err

    @classmethod
    def from_bootstrap(cls, bootstrap: str, **kwargs: Any) -> KafkaWireConnection:
        host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
        return cls(host or "127.0.0.1", int(port), **kwargs)

    def send(self, request: Any, response_type: type[Response]) -> Response:
        """Send ``request`` (a kio request dataclass) and parse the answer as ``response_type``."""
        self._correlation_id += 1
        header_type = request.__header_schema__
        header = header_type(
            request_api_key=request.__api_key__,
            request_api_version=request.__version__,
            correlation_id=self._correlation_id,
            client_id=self.client_id,
        )
        body = io.BytesIO()
        entity_writer(header_type)(body, header)
        entity_writer(type(request))(body, request)
        payload = body.getvalue()
        self._sock.sendall(_SIZE.pack(len(payload)) + payload)
        frame = self._read_frame()
        response_header, offset = entity_reader(response_type.__header_schema__)(frame, 0)
        if response_header.correlation_id != self._correlation_id:
            raise ClusterUnreachableError(
                f"correlation id mismatch: sent {self._correlation_id}, got {response_header.correlation_id}"
            )
        response, _ = entity_reader(response_type)(frame, offset)
        return response

    def _read_frame(self) -> memoryview:
        (size,) = _SIZE.unpack(self._read_exactly(4))
        return memoryview(self._read_exactly(size))

    def _read_exactly(self, size: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < size:
            chunk = self._sock.recv(size - len(chunks))
            if not chunk:
                raise ClusterUnreachableError("broker closed the connection")
            chunks += chunk
        return bytes(chunks)

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> KafkaWireConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
