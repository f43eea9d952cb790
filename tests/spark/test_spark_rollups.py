"""Rollups app on real Spark local mode, over generated landing data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import rollups
from pyspark.sql import functions as F

from spark_apps.package import application_args
from tests.spark import scenarios

pytestmark = pytest.mark.spark


def _run(landing: Path, output: Path, start: str, end: str, spark, bucket: str = "1m"):  # type: ignore[no-untyped-def]
    return rollups.run(application_args(str(landing), str(output), start, end, bucket), spark)


def test_cumulative_counter_reset_counts_from_restart_and_lookback_differences_first_point(spark, tmp_path):
    scenario = scenarios.write_counter_scenario(str(tmp_path / "landing"))
    _run(tmp_path / "landing", tmp_path / "out", "2026-01-31T13:00:00Z", "2026-01-31T14:00:00Z", spark)
    rows = spark.read.parquet(str(tmp_path / "out" / "rollups")).orderBy("bucket_start").collect()

    restarting = [r for r in rows if r["client_instance_id"] == scenario.restarting.instance_id]
    assert len(restarting) == 60
    assert [r["increase"] for r in restarting[:30]] == [60.0] * 30
    assert [r["increase"] for r in restarting[30:]] == [42.0] * 30
    assert sum(r["counter_resets"] for r in restarting) == 1
    assert restarting[30]["counter_resets"] == 1
    assert restarting[0]["rate_per_second"] == pytest.approx(60 / 55)  # first point covers 5 s since start
    assert restarting[1]["rate_per_second"] == pytest.approx(1.0)
    assert restarting[45]["rate_per_second"] == pytest.approx(0.7)

    long_running = [r for r in rows if r["client_instance_id"] == scenario.long_running.instance_id]
    assert [r["increase"] for r in long_running] == [30.0] * 60  # 12:59:55 point read via the lookback
    assert all(r["counter_resets"] == 0 for r in long_running)
    assert all(r["metric_name"] == "producer.connection.creation.total" for r in rows)


def test_librdkafka_and_java_labels_land_on_one_normalised_series(spark, tmp_path):
    rdkafka, java = scenarios.write_label_scenario(str(tmp_path / "landing"))
    _run(tmp_path / "landing", tmp_path / "out", "2026-01-31T13:00:00Z", "2026-01-31T13:02:00Z", spark)
    rows = spark.read.parquet(str(tmp_path / "out" / "rollups")).collect()

    assert {r["metric_name"] for r in rows} == {"producer.node.request.latency.avg"}
    assert {r["attributes_key"] for r in rows} == {'{"node_id":"1"}'}
    assert {r["client_software_name"] for r in rows} == {rdkafka.software_name, java.software_name}
    by_client = {r["client_instance_id"]: r for r in rows if r["bucket_start"].minute == 0}
    assert by_client[rdkafka.instance_id]["avg"] == 3.0
    assert by_client[java.instance_id]["avg"] == 4.0
    assert by_client[java.instance_id]["attributes"] == {"node_id": "1"}  # client-id label dropped
    assert by_client[java.instance_id]["client_source_address"] == java.source_address


def test_series_table_joins_points_by_raw_key_unless_nulls_make_keys_collide(spark):
    from kip714_common.series import SERIES_ID_SEED, series_table

    schema = "_source_name string, _label_keys array<string>, _label_values array<string>, _kind string, "
    schema += "_temporality string"
    plain = [("m", ["a"], ["x"], "gauge", None), ("m", [], [], "sum", "delta")]
    null_swapped = [
        ("m", ["a", "b"], [None, "x"], "gauge", None),
        ("m", ["a", "b"], ["x", None], "gauge", None),
    ]

    assert series_table(spark.createDataFrame(plain, schema), {}).raw_seed == SERIES_ID_SEED
    table = series_table(spark.createDataFrame(plain + null_swapped, schema), {})
    assert table.raw_seed is None  # every seed collides: points are joined on the whole series
    assert table.names.select("series_id").distinct().count() == 4


def test_label_sets_differing_only_in_a_null_value_stay_two_series(spark, tmp_path):
    client = scenarios.write_null_label_scenario(str(tmp_path / "landing"))
    _run(tmp_path / "landing", tmp_path / "out", "2026-01-31T13:00:00Z", "2026-01-31T13:01:00Z", spark)
    rows = spark.read.parquet(str(tmp_path / "out" / "rollups")).collect()

    assert {r["client_instance_id"] for r in rows} == {client.instance_id}
    by_key = {r["attributes_key"]: (r["count"], r["avg"]) for r in rows}
    assert by_key == {'{"a":null,"b":"x"}': (6, 1.0), '{"a":"x","b":null}': (6, 2.0)}


def test_broker_node_falls_back_to_a_numeric_resource_label_and_tolerates_any_other(spark, tmp_path):
    from tests.support.synthetic_landing import LandingWriter, series_table

    writer = LandingWriter(str(tmp_path / "landing"))
    times = scenarios.push_times(scenarios.DAY.replace(hour=13), scenarios.DAY.replace(hour=13, minute=1))
    for node_label, value in (("3", 1.0), ("node-4", 2.0)):
        writer.write(
            series_table(
                [None],
                "kafka.server.client.metrics.plugin.export.count",
                "sum",
                "delta",
                {},
                times[None, :],
                np.full((1, times.size), value),
                record_type="broker",
                broker_node_id=None,
                resource_attributes={"node_id": node_label},
            )
        )
    _run(tmp_path / "landing", tmp_path / "out", "2026-01-31T13:00:00Z", "2026-01-31T13:01:00Z", spark)
    rows = spark.read.parquet(str(tmp_path / "out" / "rollups")).collect()

    assert {r["sum"]: r["broker_node_id"] for r in rows} == {6.0: 3, 12.0: None}


def test_histogram_percentiles_are_interpolated_from_merged_buckets(spark, tmp_path):
    scenarios.write_histogram_scenario(str(tmp_path / "landing"))
    _run(tmp_path / "landing", tmp_path / "out", "2026-01-31T13:00:00Z", "2026-01-31T13:01:00Z", spark)
    (row,) = spark.read.parquet(str(tmp_path / "out" / "rollups")).collect()

    assert row["histogram_count"] == 200
    assert row["histogram_sum"] == pytest.approx(60500.0)
    assert row["avg"] == pytest.approx(302.5)
    assert row["p50"] == pytest.approx(100.0)  # 100th of 200 observations: top of (10, 100]
    assert row["p95"] == pytest.approx(100 + 900 * 0.9)
    assert row["p99"] == pytest.approx(100 + 900 * 0.98)
    assert row["signal"] == row["p99"]
    assert (row["min"], row["max"]) == (20.0, 900.0)


def test_rerunning_an_interval_replaces_its_partitions(spark, tmp_path):
    scenarios.write_anomaly_scenario(str(tmp_path / "landing"))
    args = (tmp_path / "landing", tmp_path / "out", "2026-01-31T14:00:00Z", "2026-01-31T15:00:00Z", spark)
    first = _run(*args)
    _run(tmp_path / "landing", tmp_path / "out", "2026-01-31T13:00:00Z", "2026-01-31T14:00:00Z", spark)
    second = _run(*args)

    frame = spark.read.parquet(str(tmp_path / "out" / "rollups"))
    assert first.tables["rollups"]["rows"] == second.tables["rollups"]["rows"] == 3 * 2 * 60
    assert frame.count() == 2 * 3 * 2 * 60  # both hours, each once
    keys = ["bucket_start", "client_instance_id", "metric_name", "attributes_key"]
    assert frame.groupBy(*keys).count().where(F.col("count") > 1).count() == 0


def _rollup_plan(spark, landing: Path, start: str, end: str):  # type: ignore[no-untyped-def]
    """The point kinds a read found, the optimised plan of its rollup as Spark prints it, and how many
    times that plan scans the landing zone (file relations among its leaves; the cached names table is
    a leaf of its own)."""
    from kip714_common.cli import base_parser, parse_common
    from kip714_common.landing import read_datapoints
    from kip714_common.rollup import rollup_points

    argv = ["--input", str(landing), "--output", "unused", "--start", start, "--end", end]
    _, common = parse_common(base_parser("plan"), argv)
    points = read_datapoints(spark, common.input, common.read_start, common.interval.end)
    frame = rollup_points(points, common.interval, common.read_start)
    plan = frame._jdf.queryExecution().optimizedPlan()
    leaves = plan.collectLeaves()
    scans = sum(
        1 for i in range(leaves.size()) if leaves.apply(i).getClass().getSimpleName() == "LogicalRelation"
    )
    return points.kinds, plan.toString(), scans


def test_rollup_plans_the_counter_and_histogram_branches_only_for_reads_that_need_them(spark, tmp_path):
    scenarios.write_label_scenario(str(tmp_path / "gauges"))
    kinds, plan, scans = _rollup_plan(
        spark, tmp_path / "gauges", "2026-01-31T13:00:00Z", "2026-01-31T13:02:00Z"
    )
    assert kinds == {("gauge", None)}
    assert "Window" not in plan  # no ordered-series branch
    assert scans == 1  # the points, once

    scenarios.write_counter_scenario(str(tmp_path / "counters"))
    kinds, plan, scans = _rollup_plan(
        spark, tmp_path / "counters", "2026-01-31T13:00:00Z", "2026-01-31T14:00:00Z"
    )
    assert ("sum", "cumulative") in kinds
    assert "Window" in plan
    assert scans == 2  # plain points and cumulative series

    scenarios.write_histogram_scenario(str(tmp_path / "histograms"))
    kinds, plan, scans = _rollup_plan(
        spark, tmp_path / "histograms", "2026-01-31T13:00:00Z", "2026-01-31T13:01:00Z"
    )
    assert any(kind == "histogram" for kind, _ in kinds)
    cumulative = any(temporality == "cumulative" for _, temporality in kinds)
    assert scans == 2 + cumulative  # plain, histogram and (if any) cumulative branches each read the points


def _reference_quantile(
    counts: list[int | None], bounds: list[float], low: float | None, high: float | None, quantile: float
) -> float | None:
    """``histograms.percentiles_expression``'s rule, written plainly: the bucket holding the quantile's
    observation, interpolated linearly inside it (the first bucket from ``low`` or 0, the overflow bucket
    up to ``high``)."""
    total = float(sum(count or 0 for count in counts))
    if not counts or total == 0:
        return None
    target, seen = quantile * total, 0.0
    for i, count in enumerate(counts):
        if count is not None and count > 0 and seen + count >= target:
            lower = min(low or 0.0, bounds[0] if bounds else 0.0) if i == 0 else bounds[i - 1]
            if i < len(bounds):
                upper: float | None = bounds[i]
            else:  # the overflow bucket, up to ``high``; SQL's greatest() skips nulls
                last_bound = bounds[i - 1] if i > 0 else None
                candidates = [
                    b for b in (high if high is not None else last_bound, last_bound) if b is not None
                ]
                upper = max(candidates) if candidates else None
            return None if upper is None else lower + (upper - lower) * ((target - seen) / count)
        seen += count or 0
    return None


def test_percentiles_walk_agrees_with_the_plain_rule_on_random_histograms(spark):
    from kip714_common.histograms import percentile_expression, percentiles_expression

    random = np.random.default_rng(714)
    quantiles = {"p50": 0.5, "p95": 0.95, "p99": 0.99}
    rows = []
    for _ in range(300):
        buckets = int(random.integers(1, 21))
        bounds = sorted(float(b) for b in random.choice(np.arange(1, 1000), buckets - 1, replace=False))
        counts = [
            None if random.random() < 0.05 else int(random.choice([0, 0, 1, 3, 50])) for _ in range(buckets)
        ]
        low = None if random.random() < 0.3 else float(random.uniform(0, 5))
        high = None if random.random() < 0.3 else float(random.uniform(500, 2000))
        rows.append((counts, bounds, low, high))
    rows += [([], [], None, None), (None, None, None, None), ([0, 0], [1.0], 0.0, 9.0)]
    frame = spark.createDataFrame(rows, "counts array<bigint>, bounds array<double>, low double, high double")
    walked = frame.withColumn("_q", percentiles_expression("counts", "bounds", "low", "high", quantiles))
    result = walked.select(
        "counts",
        "bounds",
        "low",
        "high",
        *[F.col("_q").getField(name).alias(name) for name in quantiles],
        percentile_expression("counts", "bounds", "low", "high", 0.99).alias("single_p99"),
    ).collect()

    assert len(result) == len(rows)
    for row in result:
        for name, quantile in quantiles.items():
            expected = _reference_quantile(
                row["counts"] or [], row["bounds"] or [], row["low"], row["high"], quantile
            )
            assert row[name] == pytest.approx(expected), (name, row)
        assert row["single_p99"] == pytest.approx(row["p99"])
