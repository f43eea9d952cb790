"""Finding Java: JAVA_HOME first, then PATH, and a clear error when neither has one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from kip714_dev.errors import LocalKafkaError
from kip714_dev.local_kafka.java_runtime import find_java


def test_java_home_wins_over_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    assert find_java() == java


def test_a_java_home_without_java_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(LocalKafkaError, match=r"JAVA_HOME=.* has no executable bin/java"):
        find_java()


def test_no_java_anywhere_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LocalKafkaError, match="no Java found: install a JDK 17"):
        find_java()


def test_java_on_path_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    on_path = shutil.which("java")
    assert on_path is not None, "the project needs a JDK on PATH (see docs/local-kafka.md)"
    assert find_java() == Path(on_path)
