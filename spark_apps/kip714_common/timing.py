"""Where an app's seconds go: wall time per step and phase, plus the JVM's own counters.

Each phase prints one ``KIP714_TIMING {json}`` line (step, phase, seconds), so a task log or a benchmark can
say how long the JVM took to start, how long each step planned, read, computed and wrote. ``jvm_report``
adds what the driver's wall clock cannot see: the JVM's start instant, its JIT and GC time, Spark's
Janino compile time, read at the end of a run.
Over Spark Connect there is no JVM in this process: the JVM part is then left out.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

PROCESS_STARTED = time.time()
"""When this Python process imported the module (the driver's start, a few ms after spark-submit's JVM
handed over to Python)."""


@dataclass
class StepTimer:
    """Wall time of named phases, in order; ``phase`` prints one line per phase as it ends."""

    step: str
    phases: list[tuple[str, float]] = field(default_factory=list)
    quiet: bool = False

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        finally:
            self.record(name, time.perf_counter() - began)

    def record(self, name: str, seconds: float) -> None:
        self.phases.append((name, seconds))
        if not self.quiet:
            emit({"step": self.step, "phase": name, "seconds": round(seconds, 3)})

    @property
    def total(self) -> float:
        return sum(seconds for _, seconds in self.phases)

    def as_dict(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for name, seconds in self.phases:
            totals[name] = round(totals.get(name, 0.0) + seconds, 3)
        return totals


TIMING_PREFIX = "KIP714_TIMING "


def emit(record: dict[str, Any]) -> None:
    print(f"{TIMING_PREFIX}{json.dumps(record, sort_keys=True)}", flush=True)


def timing_records(text: str, step: str | None = None) -> list[dict[str, Any]]:
    """The records ``emit`` printed into ``text`` (a log), in order; only ``step``'s when given."""
    records = [
        json.loads(line.removeprefix(TIMING_PREFIX))
        for line in text.splitlines()
        if line.startswith(TIMING_PREFIX)
    ]
    return [record for record in records if step is None or record.get("step") == step]


def jvm_report(spark: Any) -> dict[str, Any]:
    """JVM start instant and JIT/GC/codegen totals of the session's driver JVM ({} over Connect)."""
    try:
        context = spark.sparkContext
        jvm = context._jvm  # type: ignore[attr-defined]
    except Exception:  # Spark Connect: no local JVM to ask
        return {}
    management = jvm.java.lang.management.ManagementFactory
    gc_ms = sum(bean.getCollectionTime() for bean in management.getGarbageCollectorMXBeans())
    codegen = jvm.org.apache.spark.metrics.source.CodegenMetrics
    compile_histogram = codegen.METRIC_COMPILATION_TIME()
    report: dict[str, Any] = {
        "jvm_started_epoch_s": management.getRuntimeMXBean().getStartTime() / 1000.0,
        "python_started_epoch_s": PROCESS_STARTED,
        "jit_compile_s": management.getCompilationMXBean().getTotalCompilationTime() / 1000.0,
        "gc_s": gc_ms / 1000.0,
        "janino_compiles": compile_histogram.getCount(),
        "janino_compile_s": sum(compile_histogram.getSnapshot().getValues()) / 1000.0,
    }
    return report
