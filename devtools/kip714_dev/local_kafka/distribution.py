"""The broker's runtime classpath, resolved by Maven from Maven Central into a local cache.

Apache Kafka runs from its Maven artifacts alone: ``kafka_2.13`` and its runtime dependencies plus a
logging backend (compile-only in Kafka's build, so added here). Resolution writes into a temporary
folder and renames it into place, so an interrupted run never leaves a half cache; a manifest of
jar names and sizes lets every start detect a damaged cache cheaply.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from xml.sax.saxutils import escape

from kip714_dev.errors import LocalKafkaError
from kip714_dev.local_kafka.versions import (
    LOG4J2_VERSION,
    RELOAD4J_VERSION,
    SLF4J_1_VERSION,
    KafkaVersion,
    LoggingBackend,
)

log = logging.getLogger(__name__)

CACHE_DIR_ENV: Final = "KIP714_CACHE_DIR"
MANIFEST_NAME: Final = "manifest.json"
LIBS_DIR_NAME: Final = "libs"
MAVEN_TIMEOUT_S: Final = 900


def cache_root() -> Path:
    """``$KIP714_CACHE_DIR`` or ``~/.cache/kip714``: where every resolved Kafka version lives."""
    override = os.environ.get(CACHE_DIR_ENV)
    return Path(override).expanduser() if override else Path.home() / ".cache" / "kip714"


@dataclass(frozen=True)
class KafkaDistribution:
    """A resolved, checked Kafka classpath for one version."""

    version: KafkaVersion
    home: Path

    @property
    def libs_dir(self) -> Path:
        return self.home / LIBS_DIR_NAME

    def classpath(self) -> list[Path]:
        return sorted(self.libs_dir.glob("*.jar"))


class BrokenCacheError(LocalKafkaError):
    """The cache folder exists but its jars are missing or damaged."""


def distribution_home(version: KafkaVersion, root: Path | None = None) -> Path:
    return (root or cache_root()) / f"kafka-{version}"


def render_resolution_pom(version: KafkaVersion) -> str:
    """A throw-away pom whose runtime dependencies are exactly the broker's classpath."""
    managed_xml = "".join(
        _dependency_xml(*coordinates.split(":", 1), substitute)
        for coordinates, substitute in sorted(version.artifact_substitutes.items())
    )
    dependencies = [("org.apache.kafka", "kafka_2.13", str(version))]
    if version.logging_backend is LoggingBackend.LOG4J2:
        # Kafka 4.x keeps slf4j-api 1.7, so the matching binding is log4j-slf4j-impl (not slf4j2-impl).
        dependencies += [
            ("org.apache.logging.log4j", "log4j-api", LOG4J2_VERSION),
            ("org.apache.logging.log4j", "log4j-core", LOG4J2_VERSION),
            ("org.apache.logging.log4j", "log4j-slf4j-impl", LOG4J2_VERSION),
        ]
    else:
        dependencies += [
            ("ch.qos.reload4j", "reload4j", RELOAD4J_VERSION),
            ("org.slf4j", "slf4j-reload4j", SLF4J_1_VERSION),
        ]
    dependencies_xml = "".join(_dependency_xml(*dependency) for dependency in dependencies)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        "  <groupId>io.kip714.local</groupId>\n"
        f"  <artifactId>kafka-runtime-{escape(str(version))}</artifactId>\n"
        "  <version>1</version>\n"
        "  <packaging>pom</packaging>\n"
        f"  <dependencyManagement><dependencies>{managed_xml}</dependencies></dependencyManagement>\n"
        f"  <dependencies>{dependencies_xml}</dependencies>\n"
        "</project>\n"
    )


def _dependency_xml(group: str, artifact: str, version: str) -> str:
    return (
        f"\n    <dependency><groupId>{escape(group)}</groupId><artifactId>{escape(artifact)}</artifactId>"
        f"<version>{escape(version)}</version></dependency>"
    )


def check_distribution(home: Path, version: KafkaVersion) -> KafkaDistribution:
    """Verify a cache folder against its manifest; raise ``BrokenCacheError`` naming the first fault."""
    manifest_path = home / MANIFEST_NAME
    try:
        manifest = json.loads(manifest_path.read_text())
        jars: dict[str, int] = {str(name): int(size) for name, size in manifest["jars"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise BrokenCacheError(
            f"Kafka {version} cache at {home} has no readable {MANIFEST_NAME} ({err})"
        ) from err
    if manifest.get("kafka_version") != str(version) or not jars:
        raise BrokenCacheError(f"Kafka {version} cache at {home}: manifest does not describe Kafka {version}")
    distribution = KafkaDistribution(version=version, home=home)
    present = {jar.name for jar in distribution.classpath()}
    for name, size in jars.items():
        jar = distribution.libs_dir / name
        if name not in present:
            raise BrokenCacheError(f"Kafka {version} cache at {home}: {LIBS_DIR_NAME}/{name} is missing")
        if jar.stat().st_size != size:
            raise BrokenCacheError(
                f"Kafka {version} cache at {home}: {LIBS_DIR_NAME}/{name} has {jar.stat().st_size} bytes, "
                f"expected {size}"
            )
        try:
            with zipfile.ZipFile(jar):
                pass  # opening reads the central directory: enough to catch truncated downloads
        except (zipfile.BadZipFile, OSError) as err:
            raise BrokenCacheError(
                f"Kafka {version} cache at {home}: {LIBS_DIR_NAME}/{name} is not a jar ({err})"
            ) from err
    return distribution


def find_distribution(version: KafkaVersion, root: Path | None = None) -> KafkaDistribution | None:
    """The checked cache for ``version``; ``None`` when never resolved; ``BrokenCacheError`` when damaged."""
    home = distribution_home(version, root)
    if not home.exists():
        return None
    return check_distribution(home, version)


def ensure_distribution(
    version: KafkaVersion,
    *,
    root: Path | None = None,
    repair: bool = False,
    maven: str | None = None,
) -> KafkaDistribution:
    """Return the cached classpath, resolving it on first use (and a damaged one when ``repair``)."""
    home = distribution_home(version, root)
    try:
        existing = find_distribution(version, root)
    except BrokenCacheError as err:
        if not repair:
            raise BrokenCacheError(
                f"{err}; run `kip714 local-kafka install --kafka-version {version}` to resolve it again"
            ) from err
        log.warning("%s; resolving it again", err)
        existing = None
    if existing is not None:
        return existing
    home.parent.mkdir(parents=True, exist_ok=True)
    with _resolution_lock(home):
        # Another process may have finished the same resolution while this one waited for the lock.
        with contextlib.suppress(BrokenCacheError):
            finished = find_distribution(version, root)
            if finished is not None:
                return finished
        return _resolve_into(home, version, maven or _find_maven())


@contextlib.contextmanager
def _resolution_lock(home: Path) -> Iterator[None]:
    lock_path = home.with_name(home.name + ".lock")
    with lock_path.open("w") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)


def _find_maven() -> str:
    maven = shutil.which("mvn")
    if maven is None:
        raise LocalKafkaError(
            "Maven (mvn) is not on PATH: it is needed once to fetch Apache Kafka's jars from Maven Central"
        )
    return maven


def _resolve_into(home: Path, version: KafkaVersion, maven: str) -> KafkaDistribution:
    log.info("Resolving Apache Kafka %s and its runtime dependencies with Maven into %s", version, home)
    with staging_folder(home) as staging:
        coordinates = f"org.apache.kafka:kafka_2.13:{version}"
        pom = render_resolution_pom(version)
        jars = copy_dependencies(maven, staging, pom, subject=f"Kafka {version}", coordinates=coordinates)
        if f"kafka_2.13-{version}.jar" not in jars:
            raise LocalKafkaError(
                f"Maven finished but kafka_2.13-{version}.jar is not among the resolved jars"
            )
        publish(staging, home, {"kafka_version": str(version), "jars": jars})
    return check_distribution(home, version)


@contextlib.contextmanager
def staging_folder(home: Path) -> Iterator[Path]:
    """A fresh folder beside ``home`` to build a cache entry in; removed unless ``publish`` moved it."""
    staging = Path(tempfile.mkdtemp(prefix=f"{home.name}.partial-", dir=home.parent))
    staging.chmod(0o755)  # mkdtemp makes it private; the cache is shared like any other
    try:
        yield staging
    finally:
        with contextlib.suppress(OSError):
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)


def copy_dependencies(
    maven: str, staging: Path, pom_text: str, *, subject: str, coordinates: str, transitive: bool = True
) -> dict[str, int]:
    """Maven's ``dependency:copy-dependencies`` of a POM into ``staging``'s libs: each jar's size by name.

    The POM is written to ``staging/pom.xml``; ``subject`` and ``coordinates`` name what is resolved in
    the one-line errors.
    """
    pom = staging / "pom.xml"
    pom.write_text(pom_text)
    libs = staging / LIBS_DIR_NAME
    command = [maven, "-B", "-q", "-f", str(pom), "dependency:copy-dependencies"]
    command += ["-DincludeScope=runtime", f"-DoutputDirectory={libs}"]
    if not transitive:
        command.append("-DexcludeTransitive=true")
    try:
        completed = subprocess.run(
            command, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S, check=False
        )
    except OSError as err:
        raise LocalKafkaError(f"could not run Maven ({maven}): {err}") from err
    except subprocess.TimeoutExpired as err:
        raise LocalKafkaError(
            f"Maven did not resolve {subject} within {MAVEN_TIMEOUT_S} s; check access to Maven Central"
        ) from err
    if completed.returncode != 0:
        raise LocalKafkaError(
            f"Maven could not resolve {coordinates}: "
            f"{_maven_error_summary(completed.stdout + completed.stderr)}"
        )
    return {jar.name: jar.stat().st_size for jar in sorted(libs.glob("*.jar"))}


def publish(staging: Path, home: Path, manifest: dict[str, object]) -> None:
    """Write the manifest (what marks a complete cache entry), then rename the folder into place."""
    (staging / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    _swap_into_place(staging, home)


def _swap_into_place(staging: Path, home: Path) -> None:
    """Rename the finished folder over the final name; a damaged old cache is moved aside first."""
    if home.exists():
        discarded = Path(tempfile.mkdtemp(prefix=f"{home.name}.discarded-", dir=home.parent))
        os.rename(home, discarded / "old")
        shutil.rmtree(discarded, ignore_errors=True)
    os.rename(staging, home)


def _maven_error_summary(output: str) -> str:
    errors = [
        line.removeprefix("[ERROR]").strip() for line in output.splitlines() if line.startswith("[ERROR]")
    ]
    meaningful = [
        line for line in errors if line and not line.startswith(("To see", "Re-run", "For more", "[Help"))
    ]
    return (meaningful[0] if meaningful else output.strip().splitlines()[-1:] or ["no output"])[0][:600]
