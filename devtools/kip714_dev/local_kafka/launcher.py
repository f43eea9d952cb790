"""Starting, checking and stopping one local broker in a data dir: the code behind the CLI and the fixture.

``start_broker`` formats storage only the first time, runs the JVM detached in its own session with
its output in a file, and returns only once the broker answers a metadata request. Every failure
that a user can fix raises ``LocalKafkaError`` with one clear first line.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import shutil
import subprocess
import time
import uuid
from base64 import urlsafe_b64encode
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from kip714_dev.errors import LocalKafkaError
from kip714_dev.local_kafka.broker_config import (
    BrokerSettings,
    DataDirLayout,
    broker_properties,
    logging_system_property,
    render_logging_config,
    render_properties,
)
from kip714_dev.local_kafka.distribution import KafkaDistribution, ensure_distribution
from kip714_dev.local_kafka.java_runtime import find_java
from kip714_dev.local_kafka.ports import accepts_connections, require_free_ports
from kip714_dev.local_kafka.process_control import (
    running_broker_pid,
    terminate,
    write_pid,
)
from kip714_dev.local_kafka.state import LocalKafkaState

log = logging.getLogger(__name__)

DEFAULT_READY_TIMEOUT_S: Final = 120.0
DEFAULT_STOP_TIMEOUT_S: Final = 30.0
FORMAT_TIMEOUT_S: Final = 180.0
LOG_TAIL_LINES: Final = 25
DEFAULT_HEAP_OPTS: Final = "-Xmx1G -Xms256m"
JVM_FLAGS: Final = (
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)
STORAGE_TOOL_CLASS: Final = "kafka.tools.StorageTool"
KAFKA_MAIN_CLASS: Final = "kafka.Kafka"


def new_cluster_id() -> str:
    """A Kafka ``Uuid`` in its text form; like Kafka, never one starting with '-' (it reads as a flag)."""
    while True:
        text = urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


def tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        content = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(content[-lines:])


def _log_tails(layout: DataDirLayout) -> str:
    parts = []
    for path in (layout.console_log, layout.server_log):
        text = tail(path)
        if text.strip():
            parts.append(f"--- last lines of {path} ---\n{text}")
    return "\n".join(parts) if parts else f"(no log output in {layout.logs_dir})"


def private_plugin_copy(plugin_jar: Path, layout: DataDirLayout) -> Path:
    """The broker loads its own copy: a JVM reads classes lazily from its jar, so rebuilding the
    plugin (``make plugin``) under a running broker would break it with NoClassDefFoundError."""
    layout.plugin_dir.mkdir(parents=True, exist_ok=True)
    copy = layout.plugin_dir / plugin_jar.name
    shutil.copy2(plugin_jar, copy)
    return copy


def java_command(
    java: Path,
    distribution: KafkaDistribution,
    settings: BrokerSettings,
    layout: DataDirLayout,
    main: list[str],
) -> list[str]:
    """The JVM command line: Kafka's usual flags, the cached classpath (+ plugin jar), a main class."""
    classpath = [str(jar) for jar in distribution.classpath()]
    if settings.plugin_jar is not None:
        classpath.append(str(private_plugin_copy(settings.plugin_jar, layout)))
    heap = shlex.split(os.environ.get("KAFKA_HEAP_OPTS", DEFAULT_HEAP_OPTS))
    extra = shlex.split(os.environ.get("KAFKA_OPTS", ""))
    return [
        str(java),
        *heap,
        *JVM_FLAGS,
        f"-Dkafka.logs.dir={layout.logs_dir}",
        logging_system_property(settings.kafka_version.logging_backend, layout.logging_config),
        *extra,
        "-cp",
        os.pathsep.join(classpath),
        *main,
    ]


def write_config_files(settings: BrokerSettings, layout: DataDirLayout) -> None:
    layout.config_dir.mkdir(parents=True, exist_ok=True)
    layout.logs_dir.mkdir(parents=True, exist_ok=True)
    layout.server_properties.write_text(render_properties(broker_properties(settings, layout)))
    layout.server_properties.chmod(0o600)  # holds the SASL passwords
    layout.logging_config.write_text(
        render_logging_config(settings.kafka_version.logging_backend, layout.server_log)
    )


def storage_is_formatted(layout: DataDirLayout) -> bool:
    return layout.meta_properties.exists()


def format_storage_once(
    java: Path,
    distribution: KafkaDistribution,
    settings: BrokerSettings,
    layout: DataDirLayout,
    cluster_id: str | None = None,
) -> bool:
    """Run Kafka's storage tool the first time only; True when it formatted now.

    Every node of one cluster is formatted with the same ``cluster_id`` (a new one when ``None``).
    """
    version = str(settings.kafka_version)
    if storage_is_formatted(layout):
        formatted_with = (
            layout.formatted_marker.read_text().strip() if layout.formatted_marker.exists() else None
        )
        if formatted_with is not None and formatted_with != version:
            raise LocalKafkaError(
                f"--data-dir: {layout.root} was formatted by Kafka {formatted_with}, not {version}; "
                "use another --data-dir or delete this one"
            )
        return False
    command = java_command(
        java,
        distribution,
        settings,
        layout,
        [
            STORAGE_TOOL_CLASS,
            "format",
            "-t",
            cluster_id or new_cluster_id(),
            "-c",
            str(layout.server_properties),
        ],
    )
    try:
        completed = subprocess.run(
            command, capture_output=True, text=True, timeout=FORMAT_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as err:
        raise LocalKafkaError(f"Kafka's storage tool did not finish within {FORMAT_TIMEOUT_S:.0f} s") from err
    if completed.returncode != 0 or not storage_is_formatted(layout):
        output = "\n".join((completed.stdout + completed.stderr).strip().splitlines()[-LOG_TAIL_LINES:])
        raise LocalKafkaError(
            f"formatting storage in {layout.log_dirs} failed (exit code {completed.returncode}):\n{output}"
        )
    layout.formatted_marker.write_text(version + "\n")
    log.info("Formatted KRaft storage in %s", layout.log_dirs)
    return True


def listed_brokers(settings: BrokerSettings, timeout_s: float = 3.0) -> set[int] | None:
    """The node ids a metadata request bootstrapped on this node alone lists (a real Kafka client call);
    None while it does not answer."""
    if not accepts_connections(settings.port):
        return None
    from confluent_kafka.admin import AdminClient  # imported late: only needed once a JVM runs

    admin = AdminClient(
        {
            "bootstrap.servers": settings.bootstrap_servers,
            "enable.metrics.push": False,  # a readiness probe must not show up in telemetry
            "socket.timeout.ms": int(timeout_s * 1000),
            "log_level": 0,
        }
    )
    try:
        return set(admin.list_topics(timeout=timeout_s).brokers)
    except Exception:  # KafkaException while the broker is still starting
        return None


def broker_answers(settings: BrokerSettings, timeout_s: float = 3.0) -> bool:
    """True when the broker serves a metadata request that lists itself (and its SASL port listens)."""
    listed = listed_brokers(settings, timeout_s)
    if listed is None or settings.node_id not in listed:
        return False
    return settings.sasl_bootstrap_servers is None or accepts_connections(settings.sasl_port)


def _state_for(settings: BrokerSettings, layout: DataDirLayout, pid: int) -> LocalKafkaState:
    return LocalKafkaState(
        pid=pid,
        kafka_version=str(settings.kafka_version),
        bootstrap_servers=settings.bootstrap_servers,
        sasl_bootstrap_servers=settings.sasl_bootstrap_servers,
        sasl_users=sorted(settings.sasl_users),
        controller_port=settings.controller_port,
        node_id=settings.node_id,
        data_dir=str(layout.root),
        log_path=str(layout.server_log),
        console_log_path=str(layout.console_log),
        plugin_jar=None if settings.plugin_jar is None else str(settings.plugin_jar),
        telemetry_topic=settings.telemetry_topic,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


@dataclass(frozen=True)
class StartedBroker:
    """A broker ``start_broker`` launched; ``process`` is set when this Python process is its parent."""

    state: LocalKafkaState
    formatted_now: bool
    process: subprocess.Popen[bytes] | None


@dataclass(frozen=True)
class LaunchedBroker:
    """A broker JVM that runs but has not been seen ready yet (``await_ready`` finishes the start)."""

    settings: BrokerSettings
    layout: DataDirLayout
    process: subprocess.Popen[bytes]
    formatted_now: bool


def start_broker(
    settings: BrokerSettings,
    *,
    ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S,
    repair_cache: bool = False,
) -> StartedBroker:
    """Start the broker detached and wait until it answers; refuse if this data dir's broker runs."""
    return await_ready(launch_broker(settings, repair_cache=repair_cache), ready_timeout_s)


def check_plugin_jar(path: Path) -> None:
    """``--plugin-jar`` names a file (the jar ``make plugin`` builds); one line naming it otherwise."""
    if not path.is_file():
        what = "is a directory, not a jar" if path.is_dir() else "does not exist"
        raise LocalKafkaError(f"--plugin-jar: {path} {what} (build it with `make plugin`)")


def launch_broker(
    settings: BrokerSettings, *, repair_cache: bool = False, cluster_id: str | None = None
) -> LaunchedBroker:
    """Format (first time only) and start the JVM detached, without waiting: the nodes of a quorum
    only become ready together, so a cluster launches every node before it waits for any."""
    layout = DataDirLayout(settings.data_dir.resolve())
    running = running_broker_pid(layout.pid_file, layout.server_properties)
    if running is not None:
        current = LocalKafkaState.read(layout.state_file)
        where = f" at {current.bootstrap_servers}" if current else ""
        raise LocalKafkaError(
            f"a local Kafka already runs from {layout.root} (pid {running}){where}; stop it first"
        )
    if settings.plugin_jar is not None:
        check_plugin_jar(settings.plugin_jar)
    java = find_java()
    require_free_ports(settings.ports)
    distribution = ensure_distribution(settings.kafka_version, repair=repair_cache)
    layout.root.mkdir(parents=True, exist_ok=True)
    settings = _with_resolved_data_dir(settings, layout)
    write_config_files(settings, layout)
    formatted_now = format_storage_once(java, distribution, settings, layout, cluster_id)
    layout.state_file.unlink(missing_ok=True)
    command = java_command(
        java, distribution, settings, layout, [KAFKA_MAIN_CLASS, str(layout.server_properties)]
    )
    with layout.console_log.open("ab") as console:
        console.write(f"\n=== kip714 local-kafka start {datetime.now(UTC).isoformat()} ===\n".encode())
        console.flush()
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=console,
            stderr=subprocess.STDOUT,
            cwd=layout.root,
            start_new_session=True,  # own session and process group: survives the CLI, no terminal signals
            close_fds=True,
        )
    write_pid(layout.pid_file, process.pid)
    return LaunchedBroker(settings=settings, layout=layout, process=process, formatted_now=formatted_now)


def await_ready(launched: LaunchedBroker, ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S) -> StartedBroker:
    """Wait until the launched broker answers, then record its state; stop it if it never does."""
    settings, layout, process = launched.settings, launched.layout, launched.process
    try:
        _wait_until_ready(process, settings, layout, ready_timeout_s)
    except BaseException:
        abandon(launched)
        raise
    state = _state_for(settings, layout, process.pid)
    state.write(layout.state_file)
    return StartedBroker(state=state, formatted_now=launched.formatted_now, process=process)


def abandon(launched: LaunchedBroker) -> None:
    """Stop a broker whose start failed, and forget it."""
    with contextlib.suppress(LocalKafkaError):
        terminate(launched.process.pid, launched.layout.server_properties, DEFAULT_STOP_TIMEOUT_S)
    with contextlib.suppress(OSError, ValueError, subprocess.TimeoutExpired):
        launched.process.wait(timeout=1)
    launched.layout.pid_file.unlink(missing_ok=True)


def _with_resolved_data_dir(settings: BrokerSettings, layout: DataDirLayout) -> BrokerSettings:
    return replace(settings, data_dir=layout.root)


def _wait_until_ready(
    process: subprocess.Popen[bytes], settings: BrokerSettings, layout: DataDirLayout, timeout_s: float
) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        exit_code = process.poll()
        if exit_code is not None:
            raise LocalKafkaError(
                f"the broker exited during start-up (exit code {exit_code}); see {layout.server_log}\n"
                f"{_log_tails(layout)}"
            )
        if broker_answers(settings):
            return
        if time.monotonic() >= deadline:
            raise LocalKafkaError(
                f"the broker did not answer on {settings.bootstrap_servers} within {timeout_s:.0f} s; "
                f"see {layout.server_log}\n{_log_tails(layout)}"
            )
        time.sleep(0.5)


class BrokerNotReadyError(LocalKafkaError):
    """The JVM runs but has not been reported ready (still starting, or its start was interrupted)."""


def broker_status(data_dir: Path) -> LocalKafkaState | None:
    """The state of this data dir's ready broker, ``None`` when none runs; ``BrokerNotReadyError`` between."""
    layout = DataDirLayout(data_dir.resolve())
    pid = running_broker_pid(layout.pid_file, layout.server_properties)
    if pid is None:
        return None
    state = LocalKafkaState.read(layout.state_file)
    if state is None or state.pid != pid:
        raise BrokerNotReadyError(
            f"a broker (pid {pid}) runs from {layout.root} but is not ready (still starting?); "
            f"see {layout.server_log}"
        )
    return state


@dataclass(frozen=True)
class StopOutcome:
    was_running: bool
    killed: bool
    pid: int | None


def stop_broker(data_dir: Path, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> StopOutcome:
    """Stop this data dir's broker by its PID file: SIGTERM, then SIGKILL after ``timeout_s``."""
    layout = DataDirLayout(data_dir.resolve())
    pid = running_broker_pid(layout.pid_file, layout.server_properties)
    if pid is None:
        layout.state_file.unlink(missing_ok=True)
        return StopOutcome(was_running=False, killed=False, pid=None)
    killed = terminate(pid, layout.server_properties, timeout_s)
    layout.pid_file.unlink(missing_ok=True)
    layout.state_file.unlink(missing_ok=True)
    return StopOutcome(was_running=True, killed=killed, pid=pid)
