"""Real clients of any version: confluent-kafka in a throwaway venv, the Java harness on any kafka-clients."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from kip714_dev.errors import Kip714Error
from kip714_dev.maven_jars import JarSet, classpath

REPO_ROOT: Final = Path(__file__).resolve().parents[3]
JAVA_CLIENT_CLASSES: Final = REPO_ROOT / "tests" / "java_client" / "target" / "classes"
SLF4J_SIMPLE: Final = "org.slf4j:slf4j-simple:1.7.36"
LIBRDKAFKA_CLIENTS: Final = """
import json, sys, time
from confluent_kafka import Consumer, Producer, libversion, version
config, prefix, seconds, topic = json.loads(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
producer = Producer({**config, "client.id": prefix + "-producer", "linger.ms": 5})
consumer = Consumer({**config, "client.id": prefix + "-consumer", "group.id": prefix + "-group",
                     "auto.offset.reset": "earliest"})
consumer.subscribe([topic])
end = time.monotonic() + seconds
while time.monotonic() < end:
    producer.produce(topic, b"x")
    producer.poll(0)
    consumer.poll(0.1)
producer.flush(30)
consumer.close()
producer.flush(5)
del producer  # destroying the handle sends librdkafka's terminating push
print(json.dumps({"package": version()[0], "library": libversion()[0]}))
"""


@dataclass(frozen=True)
class ClientSpec:
    """One client library release: ``librdkafka`` (by its confluent-kafka release) or ``java``."""

    library: str
    version: str

    @property
    def prefix(self) -> str:
        """The client-id prefix of its clients (a subscription matches ``compat-.*``)."""
        return f"compat-{self.library}-{self.version}"

    @property
    def label(self) -> str:
        return f"confluent-kafka {self.version}" if self.library == "librdkafka" else f"Java {self.version}"


@dataclass(frozen=True)
class ClientOutcome:
    spec: ClientSpec
    ok: bool
    detail: str  # the library version the client reported, or why it failed


def _uv() -> str:
    found = shutil.which("uv") or str(REPO_ROOT / ".tools" / "bin" / "uv")
    if not Path(found).is_file():
        raise Kip714Error("compat: uv not found (make venv installs it into .tools/bin)")
    return found


def make_venv(version: str, root: Path) -> Path:
    """A fresh venv with confluent-kafka ``version`` from PyPI (uv's cache keeps re-creation fast)."""
    home = root / f"confluent-kafka-{version}"
    uv = _uv()
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(home)], check=True, timeout=300)
    python = home / "bin" / "python"
    subprocess.run(
        [uv, "pip", "install", "-q", "--python", str(python), f"confluent-kafka=={version}"],
        check=True,
        timeout=600,
    )
    return python


def java_classpath(version: str) -> str:
    """The harness's classes on kafka-clients ``version`` and its runtime dependencies (cached)."""
    if not JAVA_CLIENT_CLASSES.is_dir():
        raise Kip714Error(
            f"compat: Java client harness not built: {JAVA_CLIENT_CLASSES} (run: make java-client)"
        )
    jars = classpath(
        JarSet(f"kafka-clients-{version}", (f"org.apache.kafka:kafka-clients:{version}", SLF4J_SIMPLE))
    )
    return os.pathsep.join([str(JAVA_CLIENT_CLASSES), *(str(jar) for jar in jars)])


def run_client(
    spec: ClientSpec, bootstrap: str, seconds: float, python: Path | None = None, java_cp: str | None = None
) -> ClientOutcome:
    """Run a producer and a consumer of ``spec`` for ``seconds``, closing both cleanly; never raises."""
    topic = f"{spec.prefix}-traffic"
    if spec.library == "librdkafka":
        assert python is not None
        argv = [
            str(python),
            "-c",
            LIBRDKAFKA_CLIENTS,
            json.dumps({"bootstrap.servers": bootstrap}),
            spec.prefix,
        ]
        argv += [str(seconds), topic]
    else:
        assert java_cp is not None
        argv = ["java", "-Xmx256m", "-cp", java_cp, "io.kip714.javaclient.TelemetryClient"]
        argv += ["--bootstrap-server", bootstrap, "--client-id", spec.prefix, "--seconds", str(seconds)]
        argv += ["--mode", "both", "--topic", topic]
    try:
        done = subprocess.run(
            ["nice", "-n", "5", *argv], capture_output=True, text=True, timeout=seconds + 120, check=False
        )
    except subprocess.TimeoutExpired:
        return ClientOutcome(spec, False, "timed out")
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return ClientOutcome(spec, False, f"exit {done.returncode}: {tail[0][:200]}")
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return ClientOutcome(spec, True, _reported(spec, lines))


def _reported(spec: ClientSpec, lines: list[dict[str, Any]]) -> str:
    if spec.library == "librdkafka" and lines:
        return f"librdkafka {lines[-1]['library']}"
    return spec.version
