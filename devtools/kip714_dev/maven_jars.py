"""Sets of jars from Maven Central, resolved once into the local cache (``~/.cache/kip714/<name>/``).

The S3 server (S3Proxy) and Spark's s3a connector (hadoop-aws and the AWS SDK bundle, 686 MB) come
from Maven Central like Kafka does. This reuses ``local_kafka.distribution``'s cache root, lock,
staging-then-rename and manifest check, so an interrupted download never leaves a half cache and a
second start never downloads again.
"""

from __future__ import annotations

import json
import logging
import zipfile
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from kip714_dev.errors import LocalKafkaError
from kip714_dev.local_kafka.distribution import (
    LIBS_DIR_NAME,
    MANIFEST_NAME,
    _dependency_xml,
    _find_maven,
    _resolution_lock,
    cache_root,
    copy_dependencies,
    publish,
    staging_folder,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JarSet:
    """A named set of Maven coordinates (``group:artifact:version``)."""

    name: str
    coordinates: tuple[str, ...]
    transitive: bool = True

    def home(self, root: Path | None = None) -> Path:
        return (root or cache_root()) / self.name


def classpath(jar_set: JarSet, root: Path | None = None) -> list[Path]:
    """The cached jars of ``jar_set``, resolving them with Maven on first use."""
    home = jar_set.home(root)
    cached = _checked(home, jar_set)
    if cached is not None:
        return cached
    home.parent.mkdir(parents=True, exist_ok=True)
    with _resolution_lock(home):
        cached = _checked(home, jar_set)
        if cached is not None:
            return cached
        _resolve_into(home, jar_set, _find_maven())
    checked = _checked(home, jar_set)
    if checked is None:
        raise LocalKafkaError(f"{jar_set.name}: the jars resolved into {home} do not match their manifest")
    return checked


def _checked(home: Path, jar_set: JarSet) -> list[Path] | None:
    """The jars when the manifest matches them (sizes, readable zips); ``None`` when absent or damaged."""
    try:
        manifest = json.loads((home / MANIFEST_NAME).read_text())
        jars = {str(name): int(size) for name, size in manifest["jars"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if manifest.get("coordinates") != list(jar_set.coordinates) or not jars:
        return None
    libs = home / LIBS_DIR_NAME
    for name, size in jars.items():
        jar = libs / name
        try:
            if jar.stat().st_size != size:
                return None
            with zipfile.ZipFile(jar):
                pass
        except (OSError, zipfile.BadZipFile):
            return None
    return sorted(libs / name for name in jars)


def _pom(jar_set: JarSet) -> str:
    dependencies = "".join(_dependency_xml(*coordinate.split(":")) for coordinate in jar_set.coordinates)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        "  <groupId>io.kip714.local</groupId>\n"
        f"  <artifactId>{escape(jar_set.name)}</artifactId>\n"
        "  <version>1</version>\n"
        "  <packaging>pom</packaging>\n"
        f"  <dependencies>{dependencies}</dependencies>\n"
        "</project>\n"
    )


def _resolve_into(home: Path, jar_set: JarSet, maven: str) -> None:
    log.info("Resolving %s from Maven Central into %s (once)", ", ".join(jar_set.coordinates), home)
    with staging_folder(home) as staging:
        jars = copy_dependencies(
            maven,
            staging,
            _pom(jar_set),
            subject=jar_set.name,
            coordinates=", ".join(jar_set.coordinates),
            transitive=jar_set.transitive,
        )
        publish(staging, home, {"coordinates": list(jar_set.coordinates), "jars": jars})
