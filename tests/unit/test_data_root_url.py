"""The data root as a local path or an ObjectStoragePath URL, and what Spark is given for it (no servers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_provider_kip714.spark.arguments import EXTRA_CLASSPATH_ENV, storage_arguments
from airflow_provider_kip714.storage.data_root import (
    DATA_DIR_ENV,
    RunArea,
    as_storage_path,
    data_root,
    is_local,
    spark_uri,
    storage_uri,
)

CONNECTION = {
    "conn_type": "aws",
    "login": "AKIDEXAMPLE",
    "password": "secret-example",
    "extra": {"endpoint_url": "http://127.0.0.1:9714", "region_name": "us-east-1"},
}


@pytest.fixture
def aws_connection(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AIRFLOW_CONN_UNIT_S3", json.dumps(CONNECTION))
    return "unit_s3"


def test_local_paths_stay_paths(tmp_path: Path) -> None:
    assert as_storage_path(str(tmp_path)) == tmp_path
    assert as_storage_path(f"file://{tmp_path}") == tmp_path
    assert is_local(as_storage_path(tmp_path))
    assert spark_uri(tmp_path) == str(tmp_path.resolve())
    assert storage_uri(tmp_path / "x") == (tmp_path / "x").resolve().as_uri()


def test_object_store_url_as_airflow_writes_it(aws_connection: str) -> None:
    root = as_storage_path(f"s3://{aws_connection}@bucket/kip714/prod")
    assert not is_local(root)
    area = RunArea(root)
    assert str(area.landing) == f"s3://{aws_connection}@bucket/kip714/prod/landing"
    assert spark_uri(area.landing) == "s3a://bucket/kip714/prod/landing"
    assert storage_uri(area.table("rollups")) == "s3://bucket/kip714/prod/analytics/rollups"


@pytest.mark.parametrize("with_connection", [True, False])
def test_object_store_filesystems_never_answer_from_a_kept_listing(
    aws_connection: str, with_connection: bool
) -> None:
    """Other processes rewrite the data root; a kept listing made a long-lived reader fail (the S3 test in
    tests/integration/test_live_object_storage.py). A URL without a connection delegates to its own fs."""
    url = f"s3://{aws_connection}@bucket/kip714/a" if with_connection else "s3://bucket/kip714/b"
    root = as_storage_path(url)
    filesystems = [root.fs, getattr(root, "__wrapped__", root).fs, (root / "live").fs]
    assert all(not fs.dircache.use_listings_cache for fs in filesystems)


def test_data_root_from_env_then_airflow_config(monkeypatch: pytest.MonkeyPatch, aws_connection: str) -> None:
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    monkeypatch.setenv("AIRFLOW__KIP714__DATA_DIR", f"s3://{aws_connection}@cfg-bucket/root")
    assert str(data_root()) == f"s3://{aws_connection}@cfg-bucket/root"
    monkeypatch.setenv(DATA_DIR_ENV, "/srv/kip714")
    assert data_root() == Path("/srv/kip714")


def test_spark_gets_s3a_paths_and_settings_from_the_connection(
    monkeypatch: pytest.MonkeyPatch, aws_connection: str
) -> None:
    monkeypatch.setenv(EXTRA_CLASSPATH_ENV, "/jars/hadoop-aws.jar:/jars/bundle.jar")
    args, conf = storage_arguments(
        ["--input", f"s3://{aws_connection}@b/p/landing", "--output", "/local/analytics", "--bucket", "1m"]
    )
    assert args == ["--input", "s3a://b/p/landing", "--output", "/local/analytics", "--bucket", "1m"]
    live, _ = storage_arguments(
        [
            *("--input", f"s3://{aws_connection}@b/p/landing", "--output", f"s3://{aws_connection}@b/p/live"),
            *("--history-root", f"s3://{aws_connection}@b/p/analytics"),
            *("--baselines-cache", f"s3://{aws_connection}@b/p/live/baselines/x"),
        ]
    )  # live mode's other folders Spark reads and writes: not files for the driver to copy
    assert live[5::2] == ["s3a://b/p/analytics", "s3a://b/p/live/baselines/x"]
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9714"
    assert conf["spark.hadoop.fs.s3a.access.key"] == "AKIDEXAMPLE"
    assert conf["spark.hadoop.fs.s3a.secret.key"] == "secret-example"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert (
        conf["spark.driver.extraClassPath"]
        == conf["spark.executor.extraClassPath"]
        == "/jars/hadoop-aws.jar:/jars/bundle.jar"
    )


def test_local_roots_need_no_storage_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EXTRA_CLASSPATH_ENV, raising=False)
    args, conf = storage_arguments(["--input", "/data/landing", "--output", "/data/analytics"])
    assert args == ["--input", "/data/landing", "--output", "/data/analytics"]
    assert not any(key.startswith("spark.hadoop.fs.s3a") for key in conf)


def test_files_the_driver_reads_are_copied_from_object_storage(tmp_path: Path) -> None:
    """--rules and --windows name files the driver opens itself: a local path stays, a URL is copied."""
    local = tmp_path / "rules.json"
    local.write_text("{}")
    args, _ = storage_arguments(["--rules", str(local), "--bucket", "1m"])
    assert args == ["--rules", str(local), "--bucket", "1m"]
    args, _ = storage_arguments(["--windows", f"file://{local}"])
    assert Path(args[1]).read_text() == "{}"
