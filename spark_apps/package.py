"""Launch helpers: build the ``kip714_common.zip`` for ``--py-files`` and the apps' argument lists.

    python spark_apps/package.py --out build/            # prints the zip's path

From a DAG (``SparkSubmitOperator``)::

    from spark_apps.package import application_args, application_path, build_common_zip
    SparkSubmitOperator(
        task_id="rollups", conn_id="spark_default",
        application=str(application_path("rollups")),
        py_files=str(build_common_zip()),
        application_args=application_args(landing, analytics, "{{ data_interval_start }}",
                                          "{{ data_interval_end }}", bucket="1m"),
        conf={"spark.sql.shuffle.partitions": "8"},
    )

The zip is rebuilt only when a source file changed, and it is byte-for-byte reproducible (fixed entry
timestamps), so concurrent tasks may call ``build_common_zip`` safely.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

SPARK_APPS_DIR = Path(__file__).resolve().parent
COMMON_PACKAGE = "kip714_common"
APPLICATIONS = {
    "rollups": SPARK_APPS_DIR / "rollups.py",
    "anomalies": SPARK_APPS_DIR / "anomalies.py",
    "broker_metrics": SPARK_APPS_DIR / "broker_metrics.py",
    "pipeline": SPARK_APPS_DIR / "pipeline.py",
}
DEFAULT_RULES = SPARK_APPS_DIR / "rules" / "default_rules.json"
DEFAULT_BUILD_DIR = Path(os.environ.get("KIP714_SPARK_BUILD_DIR", tempfile.gettempdir())) / "kip714-spark"
_FIXED_TIME = (2020, 1, 1, 0, 0, 0)


# Launch-time settings (spark-submit --conf; the DAGs and bench_rollups both use them; kept here, not
# in kip714_common, so parsing a DAG does not import pyspark), measured on local[2] at 10M points:
# small splits and shuffle partitions keep both cores busy to the end of each stage, and the
# throughput collector suits these batch jobs (15 % less JVM CPU than G1). An app generates about 90
# classes; Spark keeps only 100 in its code cache, so a long-lived session (tests, notebooks, the
# benchmark) recompiled evicted ones, and the JVM compiled their hot methods again (1.7 s of 17 s).
# Class names without the codegen stage id: the id follows the order AQE plans stages in, so the same
# code got a new name (a cache miss, and the JVM's compiled code thrown away) from one run to the next.
# JIT_OPTIONS: see the constant.
JIT_OPTIONS = (
    "-XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=6000 "
    "-XX:Tier4CompileThreshold=150000 -XX:Tier4BackEdgeThreshold=200000"
)
"""The JVM's optimising compiler (C2) waits for ten times more calls than its default before compiling a
method. A Spark app runs a few minutes and touches a huge code base (Parquet, Catalyst, Janino, Hadoop):
with the defaults, C2 spent 15 s of CPU compiling lukewarm library code in a 17 s rollups + anomalies
run at 10M points on 2 cores, a core taken from the tasks. Measured: the rollups app in a fresh
spark-submit JVM 28-29 s -> 25-27 s, and in a warm session 17 s -> 15 s (``docs/benchmarks.md``)."""
PERFORMANCE_CONF = {
    "spark.sql.codegen.cache.maxEntries": "1000",
    "spark.sql.codegen.useIdInClassName": "false",
    "spark.sql.adaptive.advisoryPartitionSizeInBytes": "16m",
    "spark.sql.files.maxPartitionBytes": "16m",
    # a follow-mode landing writes a chunk every few seconds: an hour is ~1,000 files of 10-60 KB. Spark
    # counts each file as at least openCostInBytes (4 MB by default) when it packs files into tasks, so
    # such an hour was ~250 tasks per scan, each mostly task overhead; at 256 KB it is ~20 tasks. Files of
    # the hourly landing and of the synthetic benchmark (MBs each) are packed as before.
    "spark.sql.files.openCostInBytes": "256k",
    "spark.driver.extraJavaOptions": f"-XX:+UseParallelGC {JIT_OPTIONS}",
    "spark.executor.extraJavaOptions": f"-XX:+UseParallelGC {JIT_OPTIONS}",
}

SMALL_INPUT_JVM_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
"""For a troubleshooting window (thousands to a few million points): the JVM's quick compiler only.

Profiled on the demo's window (11k points, ``bench/bench_turnaround.py``): with C2 on, the JVM's
compiler threads used more CPU than the whole analysis (``KIP714_TIMING`` ``jit_compile_s``), on a machine
with two cores. The code C1 makes is slower per row, which matters only for inputs of tens of millions of
rows (the hourly DAG keeps ``PERFORMANCE_CONF``'s JIT settings)."""
WINDOW_CONF = {
    "spark.driver.extraJavaOptions": SMALL_INPUT_JVM_OPTIONS,
    "spark.executor.extraJavaOptions": SMALL_INPUT_JVM_OPTIONS,
}
"""Launch settings of the troubleshooting DAG's Spark application, over ``PERFORMANCE_CONF``."""


def application_path(name: str) -> Path:
    """The ``spark-submit`` file of app ``name`` (rollups, anomalies, broker_metrics)."""
    if name not in APPLICATIONS:
        raise ValueError(f"application: must be one of {', '.join(APPLICATIONS)} (got {name!r})")
    return APPLICATIONS[name]


def application_args(
    input_root: str,
    output_root: str,
    start: str,
    end: str,
    bucket: str = "1m",
    **extra: str | int | float | bool | None,
) -> list[str]:
    """The shared flags plus ``extra`` as flags (``rules="r.json"`` -> ``--rules r.json``).

    ``True`` adds a bare flag, ``False``/``None`` leave the flag out.
    """
    args = [
        "--input",
        input_root,
        "--output",
        output_root,
        "--start",
        start,
        "--end",
        end,
        "--bucket",
        bucket,
    ]
    for key, value in extra.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif value is not None and value is not False:
            args += [flag, str(value)]
    return args


def _sources() -> list[Path]:
    return sorted((SPARK_APPS_DIR / COMMON_PACKAGE).glob("*.py"))


def build_common_zip(out_dir: str | Path | None = None) -> Path:
    """Zip ``kip714_common/`` into ``out_dir`` (default: a temp build dir); returns the zip's path."""
    sources = _sources()
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    directory = Path(out_dir) if out_dir is not None else DEFAULT_BUILD_DIR
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{COMMON_PACKAGE}.zip"
    stamp = directory / f"{COMMON_PACKAGE}.zip.sha256"
    if target.exists() and stamp.exists() and stamp.read_text() == digest.hexdigest():
        return target
    partial = directory / f".{COMMON_PACKAGE}.{os.getpid()}.zip"
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for source in sources:
            entry = zipfile.ZipInfo(f"{COMMON_PACKAGE}/{source.name}", date_time=_FIXED_TIME)
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, source.read_bytes())
    os.replace(partial, target)
    stamp.write_text(digest.hexdigest())
    return target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build kip714_common.zip for spark-submit --py-files.")
    parser.add_argument("--out", default=None, help=f"output folder (default {DEFAULT_BUILD_DIR})")
    print(build_common_zip(parser.parse_args(argv).out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
