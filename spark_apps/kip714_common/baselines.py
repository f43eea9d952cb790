"""Learned thresholds: per series (metric x client group x labels), median + k x MAD of the history.

Why median/MAD: client metrics are heavy-tailed (latency spikes, bursts). Median and the median absolute
deviation ignore up to half the points being outliers, where mean/stddev (or an EWMA) get dragged towards
an anomaly and hide it. ``scale = 1.4826 x MAD`` equals the standard deviation for normal noise, so ``k``
reads as "sigmas".

What a baseline is learned from (each rule below fixes a false positive seen on data landed from real
clients, see docs/spark-apps.md):

- **One series, one baseline.** The key includes the label set (``attributes_key``). Per-node metrics
  (``node_id``) of one client differ by orders of magnitude (the bootstrap connection ``-1`` is idle, the
  leader's carries the traffic); pooled, the median is the idle node's ~0 and the busy node breaches for ever.
- **History is before the window.** Only buckets before ``--start`` are learned from: the window is what
  is judged, and judging it against itself hides a window-long problem and makes short windows noisy.
- **No clocks.** A metric that reads a clock (``producer.metadata.age``, ``*.seconds.ago``,
  ``app.info.start.time.ms``) grows with time and resets: a sawtooth whose next tooth is always above the
  history's median. Its names end with ``UNBASELINED_SUFFIXES``; static rules can still watch it.
- **Finite signals only.** The Java client reports ``NaN`` for a ``max``/``avg`` with no samples (an idle
  node); Spark orders NaN above every number, so one would "breach" every threshold.

The floor: a flat series has MAD = 0 and would flag any wobble. The scale used is therefore at least
``max(relative_floor x |median|, absolute_floor)``: by default a value must exceed the median by k x 10 %
of the median (and by k x ``absolute_floor`` when the median is 0) before it can breach.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

from kip714_common.breaches import is_finite
from kip714_common.identity import CLIENT_ID_NUMBER, GROUP_SEPARATOR
from kip714_common.landing_contract import CLIENT_IDENTITY_COLUMNS
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

NORMAL_CONSISTENCY = 1.4826
APPROX_ACCURACY = 1_000
"""percentile_approx relative error 1/1000: ample for thresholds, small per-group digests."""
BASELINE_KEYS = ("metric_name", "client_group", "attributes_key")
"""One learned baseline per series: metric x client group x normalised label set."""
UNBASELINED_SUFFIXES = (".age", ".seconds.ago", ".start.time.ms")
"""Normalised metric names ending like this read a clock (age, time since, start time): no baseline."""


@dataclass(frozen=True)
class BaselineSettings:
    k: float = 4.0
    relative_floor: float = 0.1
    absolute_floor: float = 1.0
    min_history_buckets: int = 10
    critical_factor: float = 2.0
    """Critical threshold = median + critical_factor x k x scale."""


def client_group_column(group_by: tuple[str, ...]) -> Column:
    """``software|client_id`` (by default): the client group a baseline is learned for.

    The Python twin, for readers of the thresholds table, is ``identity.baseline_client_group``.
    """
    return F.concat_ws(GROUP_SEPARATOR, *[F.coalesce(F.col(name), F.lit("")) for name in group_by])


def learn_baselines(history: DataFrame, settings: BaselineSettings) -> DataFrame:
    """Per ``BASELINE_KEYS``: median, mad, scale, threshold, critical_threshold, history_buckets.

    ``history`` holds the rollup rows before the judged window; non-finite signals are ignored.
    """
    clock = reduce(Column.__or__, [F.col("metric_name").endswith(s) for s in UNBASELINED_SUFFIXES])
    finite = history.where(is_finite(F.col("signal")) & ~clock)
    medians = finite.groupBy(*BASELINE_KEYS).agg(
        F.percentile_approx("signal", 0.5, APPROX_ACCURACY).alias("median"),
        F.count(F.lit(1)).alias("history_buckets"),
        F.min("bucket_start").alias("history_start"),
    )
    deviations = (
        finite.join(medians, list(BASELINE_KEYS))
        .groupBy(*BASELINE_KEYS)
        .agg(F.percentile_approx(F.abs(F.col("signal") - F.col("median")), 0.5, APPROX_ACCURACY).alias("mad"))
    )
    floor = F.greatest(F.abs(F.col("median")) * settings.relative_floor, F.lit(settings.absolute_floor))
    scale = F.greatest(F.col("mad") * NORMAL_CONSISTENCY, floor)
    return (
        medians.join(deviations, list(BASELINE_KEYS))
        .where(F.col("history_buckets") >= settings.min_history_buckets)
        .withColumn("scale", scale)
        .withColumn("threshold", F.col("median") + settings.k * F.col("scale"))
        .withColumn(
            "critical_threshold", F.col("median") + settings.critical_factor * settings.k * F.col("scale")
        )
    )


PEER_KINDS = ("group_id", "client_id_pattern", "software", "principal")
"""Peer groups a client can be compared with (``--peer-groups``)."""
DEFAULT_PEER_KINDS = ("group_id", "client_id_pattern")
"""On by default: members of one consumer group or one application do the same work. Software version
and principal are opt-in: they pool applications whose normal levels differ (a busy and an idle producer)."""
PEER_KEYS = ("peer_group", "metric_name", "attributes_key", "bucket_start")


@dataclass(frozen=True)
class PeerSettings:
    kinds: tuple[str, ...] = DEFAULT_PEER_KINDS
    min_peers: int = 3
    """A median needs at least three clients to say which one deviates."""
    absolute_floor: float = 0.05
    """Peers' scale floor when their median is 0 (ratios such as poll idle live in [0, 1])."""


def peer_group_column(kind: str) -> Column:
    """The peer group a rollup row belongs to for ``kind`` (``group_id=orders``...), null when none."""

    def labelled(label: str, value: Column) -> Column:
        return F.when(F.coalesce(value, F.lit("")) != "", F.concat(F.lit(label), value))

    if kind == "group_id":
        return labelled("group_id=", F.col("resource_attributes")["group_id"])
    if kind == "client_id_pattern":
        return labelled("client_id~", F.regexp_replace(F.col("client_id"), CLIENT_ID_NUMBER, ""))
    if kind == "software":
        version = F.concat_ws(" ", F.col("client_software_name"), F.col("client_software_version"))
        return labelled("software=", F.when(F.col("client_software_name").isNotNull(), version))
    if kind == "principal":
        return labelled("principal=", F.col("principal"))
    raise ValueError(f"peer group kind must be one of {PEER_KINDS}, got {kind!r}")


def peer_candidates(
    current: DataFrame, baseline: BaselineSettings, peers: PeerSettings, min_duration: int
) -> DataFrame:
    """Anomaly candidates from peers: per bucket, a client's distance from its peers' median signal.

    Cross-sectional, so a client that was already bad before the window is caught: per peer group,
    metric, label set and bucket, the median and MAD over the clients in it (at least ``min_peers``).
    ``observed`` is ``|signal - median| / scale`` (scale as for own baselines, with the peers' floor), so
    ``peak_value`` says how many scales the client sat from its peers; it breaches above ``k``.
    """
    clock = reduce(Column.__or__, [F.col("metric_name").endswith(s) for s in UNBASELINED_SUFFIXES])
    groups = F.array(*[peer_group_column(kind) for kind in peers.kinds])
    keyed = (
        current.where(is_finite(F.col("signal")) & ~clock)
        .withColumn("peer_group", F.explode(groups))
        .where(F.col("peer_group").isNotNull())
    )
    medians = (
        keyed.groupBy(*PEER_KEYS)
        .agg(
            F.percentile_approx("signal", 0.5, APPROX_ACCURACY).alias("peer_median"),
            F.count_distinct("client_instance_id").alias("peers"),
        )
        .where(F.col("peers") >= peers.min_peers)
    )
    judged = keyed.join(medians, list(PEER_KEYS))
    mads = judged.groupBy(*PEER_KEYS).agg(
        F.percentile_approx(F.abs(F.col("signal") - F.col("peer_median")), 0.5, APPROX_ACCURACY).alias("mad")
    )
    floor = F.greatest(F.abs(F.col("peer_median")) * baseline.relative_floor, F.lit(peers.absolute_floor))
    scale = F.greatest(F.col("mad") * NORMAL_CONSISTENCY, floor)
    distance = F.abs(F.col("signal") - F.col("peer_median")) / scale
    return judged.join(mads, list(PEER_KEYS)).select(
        F.lit("baseline").alias("kind"),
        F.concat(F.lit("peers:"), F.col("metric_name")).alias("rule_name"),
        "metric_name",
        F.lit("peer_deviation").alias("field"),
        F.col("peer_group").alias("client_group"),
        F.lit(">").alias("comparison"),
        F.lit(baseline.k).cast("double").alias("threshold"),
        F.lit(baseline.critical_factor * baseline.k).cast("double").alias("critical_threshold"),
        F.lit(min_duration).alias("min_duration_seconds"),
        F.lit(
            "differs from the median of its peers (same bucket) by more than k x their MAD; "
            "values in units of the peers' scale"
        ).alias("description"),
        F.lit("peers").alias("baseline_kind"),
        "peer_group",
        *CLIENT_IDENTITY_COLUMNS,
        "attributes",
        "attributes_key",
        "bucket_start",
        "bucket_seconds",
        distance.alias("observed"),
        F.coalesce(distance > F.lit(baseline.k), F.lit(False)).alias("breached"),
    )
