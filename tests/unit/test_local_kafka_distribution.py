"""The Kafka jar cache: the resolution pom, damage detection and the atomic swap (no Maven run here)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
from kip714_dev.errors import LocalKafkaError
from kip714_dev.local_kafka.distribution import (
    BrokenCacheError,
    _swap_into_place,
    cache_root,
    check_distribution,
    distribution_home,
    ensure_distribution,
    find_distribution,
    render_resolution_pom,
)
from kip714_dev.local_kafka.versions import KafkaVersion

V44 = KafkaVersion.parse("4.4.0")
V39 = KafkaVersion.parse("3.9.2")
POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def _coordinates(pom: str, section: str) -> set[tuple[str, str, str]]:
    root = ET.fromstring(pom)
    found = set()
    for dependency in root.findall(f"{section}/m:dependency", POM_NS):
        found.add(
            tuple(
                dependency.findtext(f"m:{name}", namespaces=POM_NS)
                for name in ("groupId", "artifactId", "version")
            )
        )
    return found


def test_kafka_4_pom_adds_log4j2_with_the_slf4j_1_binding() -> None:
    pom = render_resolution_pom(V44)
    dependencies = _coordinates(pom, "m:dependencies")
    artifacts = {artifact for _group, artifact, _version in dependencies}
    assert ("org.apache.kafka", "kafka_2.13", "4.4.0") in dependencies
    assert {"log4j-api", "log4j-core", "log4j-slf4j-impl"} <= artifacts
    assert "reload4j" not in artifacts
    managed = _coordinates(pom, "m:dependencyManagement/m:dependencies")
    assert ("org.apache.kafka", "kafka-tools-api", "4.3.1") in managed


def test_kafka_3_pom_uses_reload4j() -> None:
    pom = render_resolution_pom(V39)
    artifacts = {artifact for _group, artifact, _version in _coordinates(pom, "m:dependencies")}
    assert {"kafka_2.13", "reload4j", "slf4j-reload4j"} == artifacts
    assert _coordinates(pom, "m:dependencyManagement/m:dependencies") == set()


def test_cache_root_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KIP714_CACHE_DIR", str(tmp_path / "c"))
    assert cache_root() == tmp_path / "c"
    assert distribution_home(V44) == tmp_path / "c" / "kafka-4.4.0"
    monkeypatch.delenv("KIP714_CACHE_DIR")
    assert cache_root() == Path.home() / ".cache" / "kip714"


def _write_jar(path: Path, payload: bytes = b"x" * 100) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
        archive.writestr("data.bin", payload)
    return path.stat().st_size


def _fake_cache(home: Path, version: KafkaVersion) -> dict[str, int]:
    jars = {
        name: _write_jar(home / "libs" / name) for name in (f"kafka_2.13-{version}.jar", "kafka-clients.jar")
    }
    (home / "manifest.json").write_text(json.dumps({"kafka_version": str(version), "jars": jars}))
    return jars


CLIENTS_JAR = Path("libs", "kafka-clients.jar")


def _intact_v44(root: Path) -> Path:
    """The home of an intact cached Kafka 4.4.0 under ``root``: the tests below break one part of it."""
    home = distribution_home(V44, root)
    _fake_cache(home, V44)
    return home


def test_an_intact_cache_is_accepted(tmp_path: Path) -> None:
    home = distribution_home(V44, tmp_path)
    jars = _fake_cache(home, V44)
    distribution = find_distribution(V44, tmp_path)
    assert distribution is not None
    assert [jar.name for jar in distribution.classpath()] == sorted(jars)


def test_a_never_resolved_version_is_absent(tmp_path: Path) -> None:
    assert find_distribution(V39, tmp_path) is None


def test_a_missing_jar_is_reported_by_name(tmp_path: Path) -> None:
    home = _intact_v44(tmp_path)
    (home / CLIENTS_JAR).unlink()
    with pytest.raises(BrokenCacheError, match=r"libs/kafka-clients.jar is missing"):
        check_distribution(home, V44)


def test_a_truncated_jar_is_reported(tmp_path: Path) -> None:
    home = _intact_v44(tmp_path)
    jar = home / CLIENTS_JAR
    jar.write_bytes(jar.read_bytes()[:40])
    with pytest.raises(BrokenCacheError, match=r"kafka-clients.jar has 40 bytes"):
        check_distribution(home, V44)


def test_a_corrupt_jar_of_the_right_size_is_reported(tmp_path: Path) -> None:
    home = _intact_v44(tmp_path)
    jar = home / CLIENTS_JAR
    jar.write_bytes(b"\0" * jar.stat().st_size)
    with pytest.raises(BrokenCacheError, match=r"kafka-clients.jar is not a jar"):
        check_distribution(home, V44)


def test_a_cache_without_manifest_is_broken(tmp_path: Path) -> None:
    home = distribution_home(V44, tmp_path)
    _write_jar(home / "libs" / "kafka_2.13-4.4.0.jar")
    with pytest.raises(BrokenCacheError, match=r"manifest\.json"):
        check_distribution(home, V44)


def test_start_without_repair_tells_how_to_fix_a_broken_cache(tmp_path: Path) -> None:
    home = _intact_v44(tmp_path)
    (home / CLIENTS_JAR).unlink()
    with pytest.raises(BrokenCacheError, match=r"run `kip714 local-kafka install --kafka-version 4.4.0`"):
        ensure_distribution(V44, root=tmp_path, repair=False)


def test_repair_without_maven_fails_clearly_and_keeps_no_partial_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _intact_v44(tmp_path)
    (home / CLIENTS_JAR).unlink()
    missing_maven = tmp_path / "no-such-mvn"
    with pytest.raises(LocalKafkaError, match=r"could not run Maven \(.*no-such-mvn\)"):
        ensure_distribution(V44, root=tmp_path, repair=True, maven=str(missing_maven))
    assert not [path for path in tmp_path.iterdir() if ".partial-" in path.name]


def test_swap_replaces_an_old_folder_whole(tmp_path: Path) -> None:
    home = tmp_path / "kafka-4.4.0"
    (home / "libs").mkdir(parents=True)
    (home / "libs" / "stale.jar").write_bytes(b"old")
    staging = tmp_path / "kafka-4.4.0.partial-x"
    (staging / "libs").mkdir(parents=True)
    (staging / "libs" / "fresh.jar").write_bytes(b"new")
    _swap_into_place(staging, home)
    assert sorted(path.name for path in (home / "libs").iterdir()) == ["fresh.jar"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["kafka-4.4.0"]
