"""Minimal Kafka protocol connections, built on ``kio``: one synchronous, one asyncio (pipelined).

confluent-kafka and kafka-python cannot send the KIP-714 telemetry requests on demand, nor client
quotas; these speak them directly, for diagnostics, tests, the demo and load benchmarks (thousands
of client instances over a few connections). Plaintext listeners only.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
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
        self._sock.sendall(encode_request(request, self._correlation_id, self.client_id))
        return decode_response(self._read_frame(), response_type, self._correlation_id)

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


def encode_request(request: Any, correlation_id: int, client_id: str) -> bytes:
    """One size-framed request: header (api key, version, correlation id, client id) and body."""
    header_type = request.__header_schema__
    header = header_type(
        request_api_key=request.__api_key__,
        request_api_version=request.__version__,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    body = io.BytesIO()
    entity_writer(header_type)(body, header)
    entity_writer(type(request))(body, request)
    payload = body.getvalue()
    return _SIZE.pack(len(payload)) + payload


def decode_response(
    frame: memoryview | bytes, response_type: type[Response], correlation_id: int
) -> Response:
    response_header, offset = entity_reader(response_type.__header_schema__)(memoryview(frame), 0)
    if response_header.correlation_id != correlation_id:
        raise ClusterUnreachableError(
            f"correlation id mismatch: sent {correlation_id}, got {response_header.correlation_id}"
        )
    response, _ = entity_reader(response_type)(memoryview(frame), offset)
    return response


class AsyncKafkaWireConnection:
    """One TCP connection; requests are pipelined and answered in order (Kafka's per-connection rule)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str) -> None:
        self.client_id = client_id
        self._reader, self._writer = reader, writer
        self._correlation_id = 0
        self._waiting: collections.deque[tuple[int, type[Any], asyncio.Future[Any]]] = collections.deque()
        self._read_task = asyncio.get_running_loop().create_task(self._read_responses())

    @classmethod
    async def open(
        cls, host: str, port: int, client_id: str = "kip714-wire", timeout_s: float = 10.0
    ) -> AsyncKafkaWireConnection:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
        except (OSError, TimeoutError) as err:
            raise ClusterUnreachableError(f"cannot connect to {host}:{port}: {err}") from err
        return cls(reader, writer, client_id)

    async def send(self, request: Any, response_type: type[Response]) -> Response:
        self._correlation_id += 1
        answer: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        self._waiting.append((self._correlation_id, response_type, answer))
        self._writer.write(encode_request(request, self._correlation_id, self.client_id))
        await self._writer.drain()
        return await answer

    async def _read_responses(self) -> None:
        try:
            while True:
                (size,) = _SIZE.unpack(await self._reader.readexactly(4))
                frame = await self._reader.readexactly(size)
                correlation_id, response_type, answer = self._waiting.popleft()
                if not answer.done():
                    answer.set_result(decode_response(frame, response_type, correlation_id))
        except (asyncio.IncompleteReadError, ConnectionError, ClusterUnreachableError) as err:
            while self._waiting:
                _, _, answer = self._waiting.popleft()
                if not answer.done():
                    answer.set_exception(ClusterUnreachableError(f"connection lost: {err}"))

    async def close(self) -> None:
        self._read_task.cancel()
        self._writer.close()
        with contextlib.suppress(ConnectionError):
            await self._writer.wait_closed()
