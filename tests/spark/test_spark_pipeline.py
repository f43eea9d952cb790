"""The one-application pipeline on real Spark: every step's tables from one session, flags routed per step."""

from __future__ import annotations

import json
from pathlib import Path

import broker_metrics
import pipeline
import pytest
import rollups
from kip714_common import rollup, run_shares
from kip714_common.errors import SparkAppInputError

from airflow_provider_kip714.storage.data_root import RunArea
from airflow_provider_kip714.troubleshooting.rules import landed_client_metric_names
from airflow_provider_kip714.troubleshooting.window import write_convergence_windows
from tests.spark import scenarios

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).resolve().parent / "data" / "demo_landing"
RULES = Path(__file__).resolve().parents[2] / "spark_apps" / "rules" / "default_rules.json"
WINDOW = ["--start", "2026-11-22T08:17:00Z", "--end", "2026-11-22T08:22:30Z", "--bucket", "10s"]


def _argv(landing: Path, output: Path, *extra: str) -> list[str]:
    return ["--input", str(landing), "--output", str(output), *WINDOW, *extra]


def test_flags_go_to_the_steps_that_know_them(tmp_path: Path) -> None:
    argv = _argv(tmp_path, tmp_path, "--rules", str(RULES), "--history", "1h", "--throttle-ratio", "0.3")
    planned = pipeline.plan(argv)
    steps = dict(planned.steps)
    assert list(steps) == ["rollups", "anomalies", "broker_metrics", "delivery", "capabilities"]
    assert planned.remote is None and planned.concurrency == pipeline.DEFAULT_CONCURRENCY
    assert planned.chunks_from is None
    # anomalies read the rollups table: same chain, after it; the others are independent
    assert [[name for name, _ in chain] for chain in pipeline.chains(planned.steps)] == [
        ["rollups", "anomalies"],
        ["broker_metrics"],
        ["delivery"],
        ["capabilities"],
    ]
    assert "--rules" in steps["anomalies"] and "--rules" not in steps["rollups"]
    assert "--throttle-ratio" in steps["broker_metrics"] and "--throttle-ratio" not in steps["anomalies"]
    assert all("--bucket" in flags and "10s" in flags for flags in steps.values())
    assert planned.common.interval.bucket_seconds == 10


def test_a_bad_flag_of_a_later_step_fails_before_any_step_runs(tmp_path: Path) -> None:
    with pytest.raises(SparkAppInputError, match="--throttle-ratio"):
        pipeline.run(_argv(FIXTURE, tmp_path / "out", "--throttle-ratio", "2"))
    with pytest.raises(SparkAppInputError, match="--steps"):
        pipeline.plan(_argv(FIXTURE, tmp_path / "out", "--steps", "rollups,nope"))
    for bad in ("0", "9", "two"):
        with pytest.raises(SparkAppInputError, match="--concurrency"):
            pipeline.plan(_argv(FIXTURE, tmp_path / "out", "--concurrency", bad))
    for bad_json in ('{"0": -1}', '["0"]', '{"p0": 3}', "{", '{"0": true}', '{"\u0663": 1}', "x" * 10_000):
        with pytest.raises(SparkAppInputError, match="--chunks-from"):
            pipeline.plan(_argv(FIXTURE, tmp_path / "out", "--chunks-from", bad_json))
    with pytest.raises(SparkAppInputError) as refused:
        pipeline.plan(_argv(FIXTURE, tmp_path / "out", "--chunks-from", "x" * 10_000))
    assert len(str(refused.value)) < 300  # one readable line, the value cut
    assert pipeline.plan(_argv(FIXTURE, tmp_path / "out", "--chunks-from", '{"3": 7}')).chunks_from == {3: 7}
    session = "0d6f4a3c-58a4-4b1e-9a57-8f2b1c3d4e5f"
    for bad_session in ("x", session.upper(), "0d6f4a3c-58a4-1b1e-9a57-8f2b1c3d4e5f", f"{session};token=x"):
        with pytest.raises(SparkAppInputError, match="--connect-session"):
            pipeline.plan(_argv(FIXTURE, tmp_path / "out", "--connect-session", bad_session))
    shared = pipeline.plan(_argv(FIXTURE, tmp_path / "out", "--connect-session", session))
    assert shared.connect_session == session
    assert pipeline.plan(_argv(FIXTURE, tmp_path / "out")).connect_session is None
    assert not (tmp_path / "out").exists()


def test_one_session_writes_every_steps_tables(tmp_path: Path, spark, capsys) -> None:  # type: ignore[no-untyped-def]
    output = tmp_path / "out"
    area = RunArea(tmp_path / "area")
    window = {"name": "kip714-demo-exp20261122T082230Z-0a1b2c3d", "start": "2026-11-22T08:17:00+00:00"}
    window["end"] = "2026-11-22T08:22:30+00:00"
    windows = write_convergence_windows(area, window, ["org.apache.kafka."], {"client_id": "demo-.*"})
    steps = ",".join(pipeline.STEPS)  # every step, as the troubleshooting DAG runs them
    argv = _argv(
        FIXTURE, output, "--rules", str(RULES), "--history", "1h", "--steps", steps, "--windows", str(windows)
    )
    spark.catalog.clearCache()  # what earlier tests in this session cached
    summaries = pipeline.run(argv, spark)
    assert list(summaries) == list(pipeline.STEPS)
    # every frame the steps cached is released: a Connect server's cache is shared and outlives the run
    assert spark._jsparkSession.sharedState().cacheManager().isEmpty()
    rollups = summaries["rollups"].tables["rollups"]  # type: ignore[attr-defined]
    assert rollups["rows"] > 0 and summaries["rollups"].notes["null_metric_name_points"] == 0  # type: ignore[attr-defined]
    tables = ("rollups", "thresholds", "anomalies", "broker_metrics", "broker_client_metrics", "delivery")
    for table in (*tables, "capabilities", "convergence"):
        assert (output / table).is_dir(), table
    converged = spark.read.parquet(str(output / "convergence")).collect()
    assert converged and {row["subscription_name"] for row in converged} == {window["name"]}
    timings = [
        json.loads(line.split(" ", 1)[1])
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("KIP714_TIMING ")
    ]
    phases = {t["phase"] for t in timings if t["step"] == pipeline.APP_NAME}
    assert {"session", "rollups", "anomalies", "broker_metrics", "total", "jvm", "input"} <= phases
    # the rules the DAG writes before the pipeline name the metrics the pipeline then rolls up
    rolled = {r["metric_name"] for r in spark.read.parquet(str(output / "rollups")).collect()}
    (area.root / "landing").symlink_to(FIXTURE)
    assert landed_client_metric_names(area) == sorted(rolled)


def test_a_live_cycle_writes_the_same_rows_and_reads_nothing_back_for_its_summary(  # type: ignore[no-untyped-def]
    tmp_path: Path, spark
) -> None:
    """``--no-read-back`` (``kip714_live``): the same tables, without the summary's read-backs and landing
    counts, Spark jobs whose only reader is a summary line nobody reads every cycle."""
    steps = ("--steps", "rollups,anomalies", "--rules", str(RULES), "--history", "1h")
    full = pipeline.run(_argv(FIXTURE, tmp_path / "full", *steps), spark)
    live = pipeline.run(_argv(FIXTURE, tmp_path / "live", *steps, "--no-read-back"), spark)
    assert full["rollups"].notes and live["rollups"].notes == {}  # type: ignore[attr-defined]
    assert full["rollups"].tables["rollups"]["rows"] > 0  # type: ignore[attr-defined]
    assert live["rollups"].tables["rollups"]["rows"] is None  # type: ignore[attr-defined]
    for table in ("rollups", "anomalies"):
        written = [
            sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str) for r in rows)
            for rows in (
                spark.read.parquet(str(tmp_path / run / table)).collect() for run in ("full", "live")
            )
        ]
        assert written[0] == written[1] and written[0], table


def test_the_rollups_and_broker_metrics_steps_roll_up_once_and_write_what_they_write_alone(  # type: ignore[no-untyped-def]
    tmp_path: Path, spark, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a small input the two steps share one cached rollup (the brokers' per-instance counters and
    histograms rolled up once, not twice); their tables are the rows each step writes when it runs alone.
    The zone mixes broker records with clients' cumulative sums and histograms, which take the rollup's
    ordered-series and histogram branches too."""
    landing_root = tmp_path / "landing"
    scenarios.write_broker_scenario(str(landing_root))
    scenarios.write_counter_scenario(str(landing_root))
    scenarios.write_histogram_scenario(str(landing_root))

    def argv(output: str, *extra: str) -> list[str]:
        return [
            *("--input", str(landing_root), "--output", str(tmp_path / output), "--bucket", "5m"),
            *("--start", "2026-01-31T13:00:00Z", "--end", "2026-01-31T14:00:00Z", *extra),
        ]

    rolled_up: list[bool] = []
    cached_columns: list[list[str]] = []
    rollup_points, cached = rollup.rollup_points, run_shares.cached

    def counted_rollup(*args, **kwargs):  # type: ignore[no-untyped-def]
        rolled_up.append(kwargs.get("keep_buckets", False))
        return rollup_points(*args, **kwargs)

    def recorded_cache(frame):  # type: ignore[no-untyped-def]
        cached_columns.append(frame.columns)
        return cached(frame)

    monkeypatch.setattr(rollup, "rollup_points", counted_rollup)
    monkeypatch.setattr(run_shares, "cached", recorded_cache)
    spark.catalog.clearCache()
    pipeline.run(argv("together", "--steps", "rollups,broker_metrics"), spark)
    assert rolled_up == [True]  # one rollup planned for both steps...
    assert (
        sum("merged_counts" in columns for columns in cached_columns) == 1
    )  # ...and cached, so computed once
    assert spark._jsparkSession.sharedState().cacheManager().isEmpty()  # and released with the run
    rolled_up.clear()
    rollups.run(argv("alone"), spark)
    broker_metrics.run(argv("alone"), spark)
    assert rolled_up == [True, True]
    for table in ("rollups", "broker_metrics", "broker_client_metrics"):
        written = [
            sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str) for r in rows)
            for rows in (
                spark.read.parquet(str(tmp_path / run / table)).collect() for run in ("together", "alone")
            )
        ]
        assert written[0] == written[1] and written[0], table
    kinds = {
        (r["record_type"], r["metric_type"])
        for r in spark.read.parquet(str(tmp_path / "alone" / "rollups")).collect()
    }
    assert {("client", "sum"), ("client", "histogram"), ("broker", "sum"), ("broker", "histogram")} <= kinds
