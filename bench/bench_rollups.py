"""Rollups + anomalies benchmark: Spark apps on local[2] vs the same work in DuckDB (same run, same Parquet).

Workload: a synthetic producer fleet (librdkafka and Java, 10 metrics each, one push every 10 s for one
hour) written with pyarrow in ``DATAPOINT_SCHEMA`` at 1M and 10M data points. Spark runs the real apps
(``rollups.run`` then ``anomalies.run`` with the default rules and ``--history 0s``: the landing holds
only the judged hour, so Spark learns no baseline and judges the static rules only) in one local[2]
session with the DAGs' launch settings (session start-up and one warm-up pass over the smallest size
outside the timed region). The baseline is the same rollup in DuckDB SQL with 2 threads, column for
column (``DUCKDB_ROLLUP``: the same grouping, normalisation and ``ROLLUP_SCHEMA`` columns, the same
partitioned Parquet; the outputs are compared by fingerprint after the timed region), plus an anomaly
pass (median + 4 x MAD per metric and client group, KIP rule, sustained breaches). DuckDB runs first,
before the JVM starts. Printed for reference, not judged: DuckDB's lighter rollup of earlier runs, and a
second Spark pass at the largest size. Targets: Spark <= 3 x DuckDB at 10M; Spark time(10M) / time(1M)
<= 8.

The fleet-shaped case (``--fleet``, on by default): the zone ``bench_fleet_scale.py`` lands, built by
``tests/support/fleet_landing.py`` through the lander's own staging path (10,000 instances for 5
minutes: about 1,000 files of 2 s chunks, 4.8M points of which 1.9M are the brokers' per-instance
cumulative counters and histograms). The pipeline's rollups step runs on it in the same session, as the
DAGs run it (its small-input settings chosen by the bytes it reads), alternating with the synthetic
rollups of the largest size; it prints both rates (points/s, wall and the JVM's CPU seconds) and their
ratio. Target: the fleet's rate within 2x of the synthetic one.

    .venv/bin/python bench/bench_rollups.py                # 1M and 10M (generates ~0.5 GB under --data)
    .venv/bin/python bench/bench_rollups.py --sizes 1000000
    .venv/bin/python bench/bench_rollups.py --sizes 10000000 --fleet-only   # the fleet against 10M only
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "spark_apps"))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import duckdb  # noqa: E402

from tests.support.fleet_landing import FleetShape, land_fleet  # noqa: E402
from tests.support.synthetic_landing import generate_fleet  # noqa: E402

START = datetime(2026, 1, 31, 13, tzinfo=UTC)
WINDOW = ("2026-01-31T13:00:00Z", "2026-01-31T14:00:00Z")
RULES = REPO / "spark_apps" / "rules" / "default_rules.json"

DUCKDB_ROLLUP = """
CREATE OR REPLACE TEMP VIEW points AS
WITH raw AS (
    SELECT *, epoch_ns(time) AS time_ns, epoch_ns(start_time) AS start_ns,
        replace(lower(trim(metric_name)), '-', '.') AS cleaned_name,
        list_sort(list_filter(list_transform(map_entries(attributes), lambda e: {{
            'key': regexp_replace(lower(e.key), '[.-]', '_', 'g'),
            'value': CASE WHEN regexp_replace(lower(e.key), '[.-]', '_', 'g') = 'node_id'
                          THEN regexp_replace(e.value, '^node-', '') ELSE e.value END}}),
            lambda kv: kv.key <> 'client_id')) AS labels
    FROM read_parquet('{root}/datapoints/*/*/*.parquet', hive_partitioning = false)
    WHERE epoch_ns(time) >= {start_ns} AND epoch_ns(time) < {end_ns}
)
SELECT *,
    CASE WHEN starts_with(cleaned_name, 'org.apache.kafka.') THEN cleaned_name[18:] ELSE cleaned_name END
        AS normalised_name,
    CASE WHEN len(labels) = 0 THEN '' ELSE to_json(map_from_entries(labels))::VARCHAR END AS attributes_key,
    coalesce(value, value_int::DOUBLE) AS point_value,
    coalesce(node_id, TRY_CAST(resource_attributes['node_id'] AS INTEGER)) AS point_node_id,
    coalesce(cluster_id, resource_attributes['cluster_id']) AS point_cluster_id,
    CASE WHEN metric_type = 'sum' THEN coalesce(value, value_int::DOUBLE) END AS increment,
    CASE WHEN metric_type = 'sum' THEN
        CASE WHEN start_ns > 0 THEN time_ns - start_ns ELSE push_interval_ms * 1000000 END END AS elapsed_ns,
    to_timestamp(floor(epoch_ns(time) / 60e9) * 60) AS bucket_start
FROM raw;

COPY (
    WITH rolled AS (
        SELECT bucket_start, record_type, client_instance_id, client_instance_id_hex, client_id,
            client_software_name, client_software_version, client_source_address, principal, listener,
            CASE WHEN record_type = 'broker' THEN point_node_id END AS series_node,
            point_cluster_id AS cluster_id, map_entries(resource_attributes) AS resource_entries,
            normalised_name AS metric_name, metric_name AS source_metric_name, metric_type, temporality,
            metric_unit, attributes_key, any_value(labels) AS labels,
            count(*) AS count, min(point_value) AS min, max(point_value) AS max, avg(point_value) AS avg,
            sum(point_value) AS sum, arg_max(point_value, time_ns) AS last,
            arg_max(point_node_id, time_ns) AS broker_node_id,
            min(time_ns) AS first_ns, max(time_ns) AS last_ns, sum(increment) AS increase,
            sum(CASE WHEN increment IS NOT NULL THEN elapsed_ns END) / 1e9 AS elapsed_s
        FROM points
        GROUP BY ALL
    )
    SELECT bucket_start, bucket_start + INTERVAL 60 SECOND AS bucket_end, 60 AS bucket_seconds, record_type,
        client_instance_id, client_instance_id_hex, client_id, client_software_name, client_software_version,
        client_source_address, principal, listener, broker_node_id, cluster_id,
        map_from_entries(resource_entries) AS resource_attributes, metric_name, source_metric_name,
        metric_type, temporality, metric_unit, map_from_entries(labels) AS attributes, attributes_key,
        count, min, max, avg, sum, last, make_timestamp(first_ns // 1000) AS first_time,
        make_timestamp(last_ns // 1000) AS last_time, increase, rate_per_second, 0 AS counter_resets,
        NULL::BIGINT AS histogram_count, NULL::DOUBLE AS histogram_sum, NULL::DOUBLE AS p50,
        NULL::DOUBLE AS p95, NULL::DOUBLE AS p99,
        CASE WHEN metric_type = 'gauge' THEN avg ELSE rate_per_second END AS signal,
        strftime(bucket_start, '%Y-%m-%d') AS date, hour(bucket_start) AS hour
    FROM (
        SELECT *, CASE WHEN metric_type = 'sum' THEN
            CASE WHEN elapsed_s > 0 THEN increase / elapsed_s ELSE increase / 60 END END AS rate_per_second
        FROM rolled
    )
) TO '{out}/rollups' (FORMAT parquet, PARTITION_BY (date, hour), OVERWRITE_OR_IGNORE true);
"""
"""The rollups app's rollup for gauges and delta sums (what the workload holds), column for column: the same
grouping (bucket x client instance with its broker-added labels x listener/cluster x series x resource
attributes), the same name and label normalisation, every ``ROLLUP_SCHEMA`` column with the same meaning."""

DUCKDB_ROLLUP_NARROW = """
CREATE OR REPLACE TEMP VIEW narrow_points AS
SELECT
    client_instance_id, client_instance_id_hex, client_id, client_software_name, client_software_version,
    client_source_address, principal, record_type, metric_type, temporality,
    regexp_replace(regexp_replace(lower(metric_name), '-', '.', 'g'), '^org\\.apache\\.kafka\\.', '')
        AS metric_name,
    array_to_string(list_sort(list_filter(list_transform(map_entries(attributes), lambda e:
        regexp_replace(lower(e.key), '[.-]', '_', 'g') || '=' ||
        CASE WHEN regexp_replace(lower(e.key), '[.-]', '_', 'g') = 'node_id'
             THEN regexp_replace(e.value, '^node-', '') ELSE coalesce(e.value, '') END),
        lambda kv: NOT starts_with(kv, 'client_id='))), ',') AS attributes_key,
    epoch_ns(time) AS time_ns, epoch_ns(start_time) AS start_ns,
    coalesce(value, value_int::DOUBLE) AS point_value,
    to_timestamp(floor(epoch_ns(time) / 60e9) * 60) AS bucket_start
FROM read_parquet('{root}/datapoints/*/*/*.parquet', hive_partitioning = false)
WHERE epoch_ns(time) >= {start_ns} AND epoch_ns(time) < {end_ns};

COPY (
    SELECT bucket_start, record_type, client_instance_id, client_instance_id_hex, client_id,
        client_software_name, client_software_version, client_source_address, principal,
        metric_name, metric_type, temporality, attributes_key,
        count(*) AS count, min(point_value) AS min, max(point_value) AS max, avg(point_value) AS avg,
        sum(point_value) AS sum, arg_max(point_value, time_ns) AS last,
        CASE WHEN metric_type = 'gauge' THEN avg(point_value)
             ELSE sum(point_value) / nullif(sum((time_ns - start_ns) / 1e9), 0) END AS signal,
        strftime(bucket_start, '%Y-%m-%d') AS date, hour(bucket_start) AS hour
    FROM narrow_points
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13
) TO '{out}/rollups-narrow' (FORMAT parquet, PARTITION_BY (date, hour), OVERWRITE_OR_IGNORE true);
"""
"""The lighter baseline of earlier runs (13 grouping columns, 16 output columns, no maps), for reference."""

DUCKDB_ANOMALIES = """
CREATE OR REPLACE TEMP VIEW rolled AS
SELECT *, concat_ws('|', coalesce(client_software_name, ''), coalesce(client_id, '')) AS client_group
FROM read_parquet('{out}/rollups/*/*/*.parquet', hive_partitioning = true) WHERE record_type = 'client';

CREATE OR REPLACE TEMP TABLE baselines AS
WITH medians AS (
    SELECT metric_name, client_group, median(signal) AS median, count(*) AS n FROM rolled
    WHERE signal IS NOT NULL GROUP BY ALL
)
SELECT m.metric_name, m.client_group, m.median, m.n,
    median(abs(r.signal - m.median)) AS mad
FROM rolled r JOIN medians m USING (metric_name, client_group)
WHERE r.signal IS NOT NULL AND m.n >= 10 GROUP BY ALL;

COPY (
    WITH candidates AS (
        SELECT 'baseline' AS kind, r.*, r.signal AS observed,
            b.median + 4 * greatest(1.4826 * b.mad, greatest(0.1 * abs(b.median), 1.0)) AS threshold,
            60 AS min_s
        FROM rolled r JOIN baselines b USING (metric_name, client_group)
        UNION ALL BY NAME
        SELECT 'static' AS kind, r.*, r.max AS observed, 5000.0 AS threshold, 180 AS min_s
        FROM rolled r WHERE metric_name = 'producer.record.queue.time.max'
    ), breaching AS (
        SELECT *, epoch(bucket_start) // 60 - row_number() OVER (
            PARTITION BY kind, metric_name, client_instance_id, attributes_key ORDER BY bucket_start
        ) AS island
        FROM candidates WHERE observed > threshold
    )
    SELECT kind, metric_name, client_instance_id, client_id, client_source_address, attributes_key,
        min(bucket_start) AS breach_start, count(*) * 60 AS duration_seconds, max(observed) AS peak_value,
        any_value(threshold) AS threshold,
        strftime(min(bucket_start), '%Y-%m-%d') AS date, hour(min(bucket_start)) AS hour
    FROM breaching GROUP BY kind, metric_name, client_instance_id, client_id, client_source_address,
        attributes_key, island, min_s
    HAVING count(*) * 60 > min_s
) TO '{out}/anomalies' (FORMAT parquet, PARTITION_BY (date, hour), OVERWRITE_OR_IGNORE true);
"""


def generate_once(
    root: Path, generate: Callable[[Path], dict[str, int]]
) -> tuple[dict[str, int], float] | None:
    """Run ``generate(root)`` unless a run before finished it: its summary and seconds, or None when reused.

    The marker (the summary) is written last, so a run cut short is generated again from scratch.
    """
    marker = root / "GENERATED.json"
    if marker.exists():
        return None
    shutil.rmtree(root, ignore_errors=True)
    began = time.perf_counter()
    summary = generate(root)
    marker.write_text(json.dumps(summary))
    return summary, time.perf_counter() - began


def ensure_landing(data_dir: Path, points: int) -> Path:
    """Generate (once) a landing root with about ``points`` data points; reused across runs."""
    root = data_dir / f"landing-{points}"
    generated = generate_once(
        root,
        lambda into: {
            "rows": generate_fleet(into, START, hours=1, target_points=points, clients_per_chunk=500)
        },
    )
    if generated is not None:
        summary, seconds = generated
        print(f"generated {summary['rows']:,} points in {seconds:.1f} s under {root}", flush=True)
    return root


FLEET_START = START.replace(minute=20)
"""The fleet's pushes start at 13:20 and end by 13:25 (its broker records a little after): one hour."""


def ensure_fleet_landing(data_dir: Path, shape: FleetShape) -> Path:
    """Land (once) the fleet-shaped zone; reused across runs."""
    root = data_dir / f"landing-fleet-{shape.instances}x{shape.duration_s}s"
    generated = generate_once(root, lambda into: land_fleet(into, FLEET_START, shape))
    if generated is not None:
        counts, seconds = generated
        files = len(list((root / "datapoints").rglob("*.parquet")))
        print(
            f"landed the fleet's zone: {counts['points']:,} points, {counts['instances']:,} instances, "
            f"{files:,} data files in {seconds:.1f} s under {root}",
            flush=True,
        )
    return root


class JvmCpu:
    """CPU seconds (user + system) of the session's driver JVM, from ``/proc`` (Linux)."""

    def __init__(self, spark) -> None:  # type: ignore[no-untyped-def]
        self.pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[attr-defined]
        self.tick = os.sysconf("SC_CLK_TCK")

    def seconds(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / self.tick


def run_rollups_only(spark, landing: Path, out: Path, cpu: JvmCpu) -> tuple[float, float, int]:  # type: ignore[no-untyped-def]
    """The pipeline's rollups step alone over the hour, as the DAGs run it (``pipeline.py --steps
    rollups``: its choice of small-input settings by the bytes it reads included): (wall s, JVM CPU s,
    points rolled up). The session's settings are put back before each run, as in a fresh application."""
    import pipeline
    from kip714_common.session import SMALL_INPUT_CONF

    for key in SMALL_INPUT_CONF:
        launched = spark.sparkContext.getConf().get(key)
        if launched is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, launched)
    shutil.rmtree(out, ignore_errors=True)
    common = ["--input", str(landing), "--output", str(out), "--start", WINDOW[0], "--end", WINDOW[1]]
    cpu_before, began = cpu.seconds(), time.perf_counter()
    pipeline.run([*common, "--steps", "rollups"], spark)
    wall, used = time.perf_counter() - began, cpu.seconds() - cpu_before
    rolled = duckdb.sql(f"SELECT sum(count) FROM read_parquet('{out}/rollups/*/*/*.parquet')").fetchall()
    points = rolled[0][0]
    return wall, used, int(points)


def compare_fleet(spark, fleet: Path, synthetic: Path, data_dir: Path, rounds: int) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """The rollups app on the fleet's zone and the synthetic one, alternating; the rates and their ratio."""
    cpu = JvmCpu(spark)
    runs: dict[str, list[tuple[float, float, int]]] = {"fleet": [], "synthetic": []}
    for round_index in range(rounds):
        for name, landing in (("fleet", fleet), ("synthetic", synthetic)):
            wall, used, points = run_rollups_only(spark, landing, data_dir / f"out-rollups-{name}", cpu)
            runs[name].append((wall, used, points))
            print(
                f"rollups only, {name:>9} zone, round {round_index + 1}: {points:,} points in {wall:.1f} s "
                f"({points / wall:,.0f} points/s), {used:.1f} s JVM CPU ({points / used:,.0f} points/CPU-s); "
                f"load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    best = {name: min(values, key=lambda run: run[0]) for name, values in runs.items()}
    rate = {name: run[2] / run[0] for name, run in best.items()}
    cpu_rate = {name: run[2] / run[1] for name, run in best.items()}
    ratio, cpu_ratio = rate["synthetic"] / rate["fleet"], cpu_rate["synthetic"] / cpu_rate["fleet"]
    print(
        f"fleet-shaped zone: {rate['fleet']:,.0f} points/s against {rate['synthetic']:,.0f} synthetic "
        f"(best of {rounds}): synthetic / fleet = {ratio:.2f}x wall, {cpu_ratio:.2f}x JVM CPU (target <= 2)",
        flush=True,
    )
    return {"runs": runs, "ratio_wall": ratio, "ratio_cpu": cpu_ratio}


def run_spark(spark, landing: Path, out: Path) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    import anomalies
    import rollups

    common = ["--input", str(landing), "--output", str(out), "--start", WINDOW[0], "--end", WINDOW[1]]
    began = time.perf_counter()
    rollups.run(common, spark)
    rolled = time.perf_counter()
    # no peer baselines: DuckDB's anomaly pass has none, so the comparison stays the same work (peers cost
    # about 7 s more at 1M points on local[2]: 10.5 s against 3.5 s, measured at commit 2621024)
    anomalies.run([*common, "--rules", str(RULES), "--history", "0s", "--peer-groups", "none"], spark)
    return rolled - began, time.perf_counter() - rolled


def run_duckdb(landing: Path, out: Path) -> tuple[float, float, float]:
    """DuckDB's rollup, its anomaly pass, and the narrow rollup of earlier runs (seconds each)."""
    connection = duckdb.connect()
    connection.execute("SET threads = 2")
    connection.execute("SET TimeZone = 'UTC'")
    out.mkdir(parents=True, exist_ok=True)
    start_ns = int(START.timestamp()) * 1_000_000_000
    values = {"root": landing, "out": out, "start_ns": start_ns, "end_ns": start_ns + 3600 * 1_000_000_000}
    began = time.perf_counter()
    connection.execute(DUCKDB_ROLLUP.format(**values))
    rolled = time.perf_counter()
    connection.execute(DUCKDB_ANOMALIES.format(**values))
    done = time.perf_counter()
    connection.execute(DUCKDB_ROLLUP_NARROW.format(**values))
    narrow = time.perf_counter() - done
    connection.close()
    return rolled - began, done - rolled, narrow


def rollup_fingerprint(path: Path) -> tuple[object, ...]:
    """Totals that differ if the two engines' rollups differ in rows, keys or measured values."""
    return duckdb.sql(
        f"""SELECT count(*), sum(count), count(DISTINCT (client_instance_id, metric_name, attributes_key)),
            round(sum(sum), 3), round(sum(increase), 3), round(sum(rate_per_second), 3), round(sum(last), 3),
            round(sum(signal), 3), sum(counter_resets), epoch_us(min(first_time)), epoch_us(max(last_time)),
            count(DISTINCT attributes_key), count(DISTINCT source_metric_name), count(DISTINCT listener)
        FROM read_parquet('{path}/*/*/*.parquet')"""
    ).fetchall()[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,10000000", help="comma list of data point counts")
    parser.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "kip714-bench-rollups"))
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--no-fleet", dest="fleet", action="store_false", help="skip the fleet-shaped case")
    parser.add_argument("--fleet-only", action="store_true", help="only the fleet against the largest size")
    parser.add_argument("--fleet-instances", type=int, default=10_000)
    parser.add_argument("--fleet-duration-s", type=int, default=300)
    parser.add_argument("--fleet-rounds", type=int, default=2)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    data_dir = Path(args.data)
    landings = {size: ensure_landing(data_dir, size) for size in sizes}
    fleet_shape = FleetShape(instances=args.fleet_instances, duration_s=args.fleet_duration_s)
    fleet = ensure_fleet_landing(data_dir, fleet_shape) if args.fleet or args.fleet_only else None

    # DuckDB first, every size, before the JVM starts: after a Spark run the JVM's compiler threads stay
    # busy for seconds and take a core from DuckDB (measured: 8.1 s instead of 5.0 s at 10M).
    print(f"load average before DuckDB: {os.getloadavg()[0]:.2f} (1 min)", flush=True)
    duck_times = {}
    for size, landing in landings.items() if not args.fleet_only else ():
        duck_out = data_dir / f"out-duckdb-{size}"
        shutil.rmtree(duck_out, ignore_errors=True)
        duck_times[size] = run_duckdb(landing, duck_out)

    from kip714_common.session import configure
    from package import PERFORMANCE_CONF
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("kip714-bench-rollups")
        .config("spark.driver.memory", args.driver_memory)
        .config("spark.sql.shuffle.partitions", "8")
        # the DAGs' launch settings (small splits and partitions for local[2], the throughput GC)
        .config(map=PERFORMANCE_CONF)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    configure(spark)
    management = spark.sparkContext._jvm.java.lang.management  # type: ignore[attr-defined]
    collectors = [str(bean.getName()) for bean in management.ManagementFactory.getGarbageCollectorMXBeans()]
    print("JVM garbage collectors: " + ", ".join(collectors), flush=True)
    # one untimed pass over the smallest size: class loading, JIT and the page cache out of the figures
    run_spark(spark, landings[min(sizes)], data_dir / "out-warmup")
    if fleet is not None:
        # one untimed pass over the fleet: its cumulative and histogram branches compile their own code
        run_spark(spark, fleet, data_dir / "out-warmup-fleet")
    if args.fleet_only:
        assert fleet is not None
        figures = compare_fleet(spark, fleet, landings[max(sizes)], data_dir, args.fleet_rounds)
        spark.stop()
        print(f"load average at end: {os.getloadavg()[0]:.2f} (1 min)", flush=True)
        print("BENCH_JSON " + json.dumps({"fleet": figures}, sort_keys=True))
        return 0

    results = {}
    mismatches = 0
    print(f"load average at start: {os.getloadavg()[0]:.2f} (1 min)", flush=True)
    for size, landing in landings.items():
        spark_out, duck_out = data_dir / f"out-spark-{size}", data_dir / f"out-duckdb-{size}"
        shutil.rmtree(spark_out, ignore_errors=True)
        spark_rollup, spark_anomalies = run_spark(spark, landing, spark_out)
        duck_rollup, duck_anomalies, duck_narrow = duck_times[size]
        # the same rollup: rows, points, keys and measured values, checked after the timed region
        spark_print = rollup_fingerprint(spark_out / "rollups")
        duck_print = rollup_fingerprint(duck_out / "rollups")
        spark_rows, spark_points = spark_print[:2]
        duck_rows, duck_points = duck_print[:2]
        if spark_print != duck_print:
            print(f"MISMATCH rollups: spark {spark_print} vs duckdb {duck_print}", flush=True)
            mismatches += 1
        results[size] = {
            "spark_rollups_s": spark_rollup,
            "spark_anomalies_s": spark_anomalies,
            "spark_total_s": spark_rollup + spark_anomalies,
            "duckdb_rollups_s": duck_rollup,
            "duckdb_anomalies_s": duck_anomalies,
            "duckdb_total_s": duck_rollup + duck_anomalies,
            "duckdb_narrow_rollup_s": duck_narrow,
            "rollup_rows_spark": spark_rows,
            "rollup_rows_duckdb": duck_rows,
            "rollup_points_spark": spark_points,
            "rollup_points_duckdb": duck_points,
        }
        r = results[size]
        print(
            f"{size:>11,} points | spark rollups {r['spark_rollups_s']:6.1f} s + anomalies "
            f"{r['spark_anomalies_s']:5.1f} s = {r['spark_total_s']:6.1f} s | "
            f"duckdb {r['duckdb_rollups_s']:5.1f} s"
            f" + {r['duckdb_anomalies_s']:5.1f} s = {r['duckdb_total_s']:6.1f} s | spark/duckdb "
            f"{r['spark_total_s'] / r['duckdb_total_s']:4.2f}x | rollup rows {spark_rows:,} vs {duck_rows:,}"
            f" | points {spark_points:,} vs {duck_points:,}",
            flush=True,
        )
        print(
            f"{'':>11}   reference: duckdb's narrow rollup of earlier runs (13 keys, 16 columns, no maps) "
            f"{duck_narrow:5.1f} s; spark / (narrow + anomalies) "
            f"{r['spark_total_s'] / (duck_narrow + duck_anomalies):4.2f}x",
            flush=True,
        )
    # reference only, not the target: the same largest run again, its code now compiled for that size
    largest = max(sizes)
    again_rollup, again_anomalies = run_spark(spark, landings[largest], data_dir / f"out-spark-{largest}")
    again = again_rollup + again_anomalies
    results[largest]["spark_second_pass_s"] = again
    if fleet is not None:
        results["fleet"] = compare_fleet(spark, fleet, landings[largest], data_dir, args.fleet_rounds)
    versus_again = again / results[largest]["duckdb_total_s"]
    print(
        f"{largest:>11,} points | reference: spark's second pass {again_rollup:.1f} s + "
        f"{again_anomalies:.1f} s = {again:.1f} s ({versus_again:.2f}x duckdb), once the JIT compiler's "
        "work at this size (included above) is done",
        flush=True,
    )
    spark.stop()
    print(f"load average at end: {os.getloadavg()[0]:.2f} (1 min)", flush=True)
    if len(sizes) >= 2:
        small, large = results[min(sizes)], results[max(sizes)]
        scaling = large["spark_total_s"] / small["spark_total_s"]
        versus = large["spark_total_s"] / large["duckdb_total_s"]
        print(f"spark time({max(sizes):,}) / time({min(sizes):,}) = {scaling:.2f} (target <= 8)")
        print(f"spark / duckdb at {max(sizes):,} = {versus:.2f}x (target <= 3)")
    print("BENCH_JSON " + json.dumps(results, sort_keys=True))
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
