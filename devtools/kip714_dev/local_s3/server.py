"""Start, check and stop one S3Proxy (``org.gaul:s3proxy``, filesystem backend) in a data dir.

``start`` is idempotent: when this data dir's server already runs it returns its state. It returns
only once the server answers S3 calls and the bucket exists. Keys are generated once per data dir
and kept in its ``s3proxy.properties`` (mode 0600).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from kip714_dev.errors import LocalKafkaError
from kip714_dev.jvm_daemon import launch, log_tail, running_pid, terminate
from kip714_dev.local_kafka.java_runtime import find_java
from kip714_dev.local_kafka.ports import require_free_ports
from kip714_dev.maven_jars import JarSet, classpath

S3PROXY = JarSet("s3proxy-2.6.0", ("org.gaul:s3proxy:2.6.0",))
MAIN_CLASS: Final = "org.gaul.s3proxy.Main"
HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 9714
DEFAULT_BUCKET: Final = "kip714"
READY_TIMEOUT_S: Final = 90.0
STOP_TIMEOUT_S: Final = 20.0
# S3-compatible servers reject the newer default request checksums of the AWS SDKs (botocore >= 1.36,
# the C++ SDK under pyarrow): ask for checksums only where the API requires them.
CHECKSUM_ENV: Final = {
    "AWS_REQUEST_CHECKSUM_CALCULATION": "when_required",
    "AWS_RESPONSE_CHECKSUM_VALIDATION": "when_required",
}


@dataclass(frozen=True)
class LocalS3State:
    pid: int
    endpoint_url: str
    access_key: str
    secret_key: str
    bucket: str
    region: str
    data_dir: str
    log_path: str
    started_at: str

    def as_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)


@dataclass(frozen=True)
class Layout:
    root: Path

    @property
    def properties(self) -> Path:
        return self.root / "s3proxy.properties"

    @property
    def blobs(self) -> Path:
        return self.root / "blobs"

    @property
    def pid_file(self) -> Path:
        return self.root / "s3proxy.pid"

    @property
    def state_file(self) -> Path:
        return self.root / "s3proxy-state.json"

    @property
    def log(self) -> Path:
        return self.root / "s3proxy.log"


def _keys(layout: Layout) -> tuple[str, str]:
    """The data dir's keys: kept from an earlier start (so clients' connections stay valid), else new."""
    if layout.properties.exists():
        values = dict(
            line.split("=", 1) for line in layout.properties.read_text().splitlines() if "=" in line
        )
        if values.get("s3proxy.identity") and values.get("s3proxy.credential"):
            return values["s3proxy.identity"], values["s3proxy.credential"]
    return "kip714-" + secrets.token_hex(4), secrets.token_urlsafe(24)


def _write_properties(layout: Layout, port: int, access_key: str, secret_key: str) -> None:
    lines = {
        "s3proxy.endpoint": f"http://{HOST}:{port}",
        "s3proxy.authorization": "aws-v2-or-v4",
        "s3proxy.identity": access_key,
        "s3proxy.credential": secret_key,
        "jclouds.provider": "filesystem",
        "jclouds.filesystem.basedir": str(layout.blobs),
    }
    layout.blobs.mkdir(parents=True, exist_ok=True)
    partial = layout.properties.with_name(layout.properties.name + ".partial")
    partial.write_text("".join(f"{key}={value}\n" for key, value in lines.items()))
    partial.chmod(0o600)
    os.replace(partial, layout.properties)


def s3_client(endpoint_url: str, access_key: str, secret_key: str, region: str = "us-east-1") -> Any:
    """A botocore S3 client for this server (path-style, checksums only where required)."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=endpoint_url,
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        region_name=region,
        config=Config(
            s3={"addressing_style": "path"},
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
            retries={"max_attempts": 2},
            connect_timeout=2,
            read_timeout=10,
        ),
    )


def _bucket_ready(state: LocalS3State) -> bool:
    from botocore.exceptions import BotoCoreError, ClientError

    client = s3_client(state.endpoint_url, state.access_key, state.secret_key, state.region)
    try:
        existing = {bucket["Name"] for bucket in client.list_buckets().get("Buckets", [])}
        if state.bucket not in existing:
            client.create_bucket(Bucket=state.bucket)
        client.head_bucket(Bucket=state.bucket)
    except (BotoCoreError, ClientError):
        return False
    return True


def status(data_dir: Path) -> LocalS3State | None:
    layout = Layout(data_dir.resolve())
    pid = running_pid(layout.pid_file, str(layout.properties))
    if pid is None or not layout.state_file.exists():
        return None
    state = LocalS3State(**json.loads(layout.state_file.read_text()))
    return state if state.pid == pid else None


def start(data_dir: Path, port: int = DEFAULT_PORT, bucket: str = DEFAULT_BUCKET) -> LocalS3State:
    """Start S3Proxy (or return the running one) and wait until ``bucket`` exists."""
    layout = Layout(data_dir.resolve())
    running = status(layout.root)
    if running is not None:
        _require_same(running, port, bucket)
        return running
    if running_pid(layout.pid_file, str(layout.properties)) is not None:
        raise LocalKafkaError(f"an S3Proxy runs from {layout.root} but is not ready; run stop first")
    java = find_java()
    require_free_ports({"--port": port}, HOST)
    jars = classpath(S3PROXY)
    layout.root.mkdir(parents=True, exist_ok=True)
    access_key, secret_key = _keys(layout)
    _write_properties(layout, port, access_key, secret_key)
    command = [str(java), "-Xmx512m", "-cp", os.pathsep.join(map(str, jars)), MAIN_CLASS]
    command += ["--properties", str(layout.properties)]
    process = launch(command, cwd=layout.root, console_log=layout.log, pid_file=layout.pid_file)
    state = LocalS3State(
        pid=process.pid,
        endpoint_url=f"http://{HOST}:{port}",
        access_key=access_key,
        secret_key=secret_key,
        bucket=bucket,
        region="us-east-1",
        data_dir=str(layout.root),
        log_path=str(layout.log),
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    try:
        _await_bucket(state, process, layout)
    except BaseException:
        # Any failure, Ctrl-C included: stop the JVM we launched so no half-started server is left.
        terminate(process.pid, str(layout.properties), STOP_TIMEOUT_S)
        layout.pid_file.unlink(missing_ok=True)
        layout.state_file.unlink(missing_ok=True)
        raise
    partial = layout.state_file.with_name(layout.state_file.name + ".partial")
    partial.write_text(state.as_json() + "\n")
    partial.chmod(0o600)
    os.replace(partial, layout.state_file)
    return state


def _require_same(running: LocalS3State, port: int, bucket: str) -> None:
    """A running server is returned only when it is the one asked for; never ignore a flag silently."""
    if running.bucket != bucket:
        raise LocalKafkaError(
            f"--bucket: the S3Proxy of {running.data_dir} already runs with bucket {running.bucket!r}, "
            f"not {bucket!r}; use --bucket {running.bucket} or stop it first"
        )
    if running.endpoint_url != f"http://{HOST}:{port}":
        raise LocalKafkaError(
            f"--port: the S3Proxy of {running.data_dir} already runs at {running.endpoint_url}, "
            f"not port {port}; use that port or stop it first"
        )


def _await_bucket(state: LocalS3State, process: subprocess.Popen[bytes], layout: Layout) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not _bucket_ready(state):
        if process.poll() is not None or time.monotonic() > deadline:
            why = "exited" if process.poll() is not None else f"did not answer within {READY_TIMEOUT_S:.0f} s"
            raise LocalKafkaError(f"S3Proxy {why}; see {layout.log}\n{log_tail(layout.log)}")
        time.sleep(0.5)


def stop(data_dir: Path, timeout_s: float = STOP_TIMEOUT_S) -> int | None:
    """Stop this data dir's S3Proxy; returns its PID, ``None`` when none ran. The data stays."""
    layout = Layout(data_dir.resolve())
    pid = running_pid(layout.pid_file, str(layout.properties))
    if pid is not None:
        terminate(pid, str(layout.properties), timeout_s)
    layout.pid_file.unlink(missing_ok=True)
    layout.state_file.unlink(missing_ok=True)
    return pid
