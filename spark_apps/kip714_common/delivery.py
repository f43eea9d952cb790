"""Delivery health: pushes expected against pushes landed, per client instance and hour.

A *push* is one topic record (partition, offset) of a client; its time is when the broker accepted it
(the record timestamp). A client is expected to push every ``push_interval`` (the broker's
``kip714.push_interval_ms`` header, else the median gap between its own pushes) from its first landed
push until its terminating push, or until the end of the interval when it never sent one.

Status of an instance-hour, first match wins:

* ``silent``: no terminating push and nothing landed for more than ``SILENT_AFTER`` times the client's
  cadence before the interval's end; ``silent_since`` is its last landed push. The cadence is the push
  interval, or the client's last gap between two pushes when that is longer: a client the broker
  throttles keeps pushing, only more slowly, and is not silent for it. A client the broker switched off (Kafka
  >= 4.3.1 answers a push that is too large after decompression with INVALID_RECORD, and the Java client
  then stops for good) and a client killed with SIGKILL both look like this. Not for a client that
  never sends a terminating push on a clean close (``NO_TERMINATING_PUSH``: the Java producer, whose
  sender thread exits before it sends the final push; an instance that pushed no consumer metric): such
  an instance *ended* at its last landed push (``ended_without_terminating``), is expected no further,
  and is never called silent, since a clean close and a crash look alike for it. The Java consumer
  does send its final push (docs/compatibility.md), so its silence is judged like librdkafka's.
* ``throttled``: the broker's ``throttle.count`` for the instance grew in that hour.
* ``gaps``: one gap between consecutive pushes exceeded ``GAP_AFTER`` intervals. Each gap is judged
  against the cadence of the push that ends it (its ``kip714.push_interval_ms`` header, else the
  instance's interval), so an hour in which a troubleshooting window changed a client's interval is
  judged at each cadence in turn. A gap across a change of the interval header is a re-subscription,
  not a loss: the broker refused the client's next push under the old subscription
  (UNKNOWN_SUBSCRIPTION_ID, counted in ``unknown_subscription_requests``), and the client fetched the
  new one and pushed again one new interval later. That pause, one interval of the old cadence, is
  taken off the gap before it is judged. The signal is the interval header: the plugin cannot see the
  request's subscription id (``kip714.subscription_id`` is always empty), so a re-subscription that keeps
  the interval (only the metrics changed), and any re-subscription on Kafka 3.7-4.1 (no interval
  header), still reads as a gap of up to two intervals.
* ``ok``.

Clients whose every push was refused never land anything: per broker and hour the broker's
``instance.count`` gauge is compared with the instances that pushed to that broker, and a row without a
client instance (``unseen_instances`` > 0, status ``silent``) says how many the broker knew but never
saw push. That gauge also counts clients no subscription matched (they never push), so read the row
together with the subscriptions of that hour.
"""

from __future__ import annotations

from kip714_common.broker_metric_names import BrokerMetric
from kip714_common.cli import Interval
from kip714_common.counters import increase_of
from kip714_common.metric_names import normalise_metric_name
from kip714_common.schemas import CLIENT_IDENTITY_COLUMNS
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

SILENT_AFTER = 2.5
"""Intervals without a push (and without a terminating push) before an instance counts as silent."""
GAP_AFTER = 1.5
"""A gap longer than this many intervals means at least one push went missing."""
DEFAULT_INTERVAL_SECONDS = 300.0
"""KIP-714's default push interval, used when neither the header nor two pushes tell the interval."""
HOUR = 3600
NO_TERMINATING_PUSH = ("apache-kafka-java",)
"""``client_software_name`` of libraries whose producer sends no terminating push when closed cleanly, so
its absence says nothing. Measured with the 4.4.0 Java producer (docs/compatibility.md): ``close()``
moves the reporter to TERMINATING_PUSH_NEEDED, then the sender thread, having nothing else in flight,
exits without sending it (apache/kafka ``ClientTelemetryReporter`` / ``Sender.run``). The Java
consumers 3.7.2 to 4.4.0 landed theirs on every broker 3.7.2 to 4.4.0 (the compatibility matrix of
2026-12-05), so an instance that pushed consumer metrics is judged like any other."""
CONSUMER_METRIC_PREFIX = normalise_metric_name("org.apache.kafka.consumer.", {})
"""Names as the apps read them (normalised: ``consumer.``): an instance with one is a consumer."""


def _seconds(timestamp: Column) -> Column:
    return F.unix_micros(timestamp) / 1e6


def landed_pushes(points: DataFrame) -> DataFrame:
    """One row per landed client push: instance, push_time, terminating, interval header, labels."""
    client = points.where((F.col("record_type") == "client") & F.col("client_instance_id").isNotNull())
    who = F.struct(*CLIENT_IDENTITY_COLUMNS[1:], "cluster_id", "broker_node_id")
    return client.groupBy("client_instance_id", "topic", "partition", "offset").agg(
        F.min(F.coalesce(F.col("record_timestamp"), F.col("ts"))).alias("push_time"),
        F.max(F.coalesce(F.col("terminating"), F.lit(False))).alias("terminating"),
        F.max("push_interval_ms").alias("push_interval_ms"),
        F.first(who, ignorenulls=True).alias("who"),
        F.max(F.col("metric_name").startswith(CONSUMER_METRIC_PREFIX)).alias("consumer_metrics"),
    )


def per_instance(pushes: DataFrame, interval: Interval, horizon_micros: int | None = None) -> DataFrame:
    """Per pushing instance: identity, first/last push, terminated, interval, silence, expectation end.

    Silence and expected pushes are judged up to the data's horizon: the interval's end, or one push
    interval after the newest landed record (client or broker) when that is earlier. An hour still in
    progress, or a window whose subscription has just ended, is not "silent" for pushes that simply have
    not happened yet.
    """
    ordered = Window.partitionBy("client_instance_id").orderBy("push_time")
    with_gaps = pushes.withColumn(
        "gap_seconds", _seconds(F.col("push_time")) - _seconds(F.lag("push_time").over(ordered))
    )
    instances = with_gaps.groupBy("client_instance_id").agg(
        F.min("push_time").alias("first_push"),
        F.max("push_time").alias("last_push"),
        F.max("terminating").alias("terminated"),
        F.max_by("push_interval_ms", "push_time").alias("_header_ms"),
        F.percentile_approx("gap_seconds", 0.5, 1000).alias("_median_gap"),
        F.max_by("gap_seconds", "push_time").alias("_last_gap"),
        F.max_by("who", "push_time").alias("who"),
        F.max(F.coalesce(F.col("consumer_metrics"), F.lit(False))).alias("_consumer"),
    )
    interval_seconds = F.coalesce(
        F.when(F.col("_header_ms") > 0, F.col("_header_ms") / 1000.0),
        F.col("_median_gap"),
        F.lit(DEFAULT_INTERVAL_SECONDS),
    )
    end = F.lit(interval.end).cast("timestamp")
    if horizon_micros is not None:
        after_newest = F.timestamp_micros(
            F.lit(horizon_micros) + (F.col("interval_seconds") * 1e6).cast("long")
        )
        end = F.least(end, after_newest)
    quiet = _seconds(end) - _seconds(F.col("last_push"))
    cadence = F.greatest(F.col("interval_seconds"), F.coalesce(F.col("_last_gap"), F.lit(0.0)))
    stopped = ~F.col("terminated") & (quiet > SILENT_AFTER * cadence)
    sends_no_terminating = F.coalesce(
        F.col("who.client_software_name").isin(*NO_TERMINATING_PUSH), F.lit(False)
    ) & ~F.col("_consumer")
    return (
        instances.withColumn("interval_seconds", interval_seconds)
        .withColumn("ended_without_terminating", stopped & sends_no_terminating)
        .withColumn("silent_since", F.when(stopped & ~sends_no_terminating, F.col("last_push")))
        # terminated (or ended, for a library that sends no final push): expected up to its last push;
        # otherwise up to the interval's end
        .withColumn(
            "expect_end",
            F.when(F.col("terminated") | F.col("ended_without_terminating"), F.col("last_push")).otherwise(
                end
            ),
        )
        .select(
            "client_instance_id",
            "who.*",
            "first_push",
            "last_push",
            "terminated",
            "ended_without_terminating",
            "interval_seconds",
            "silent_since",
            "expect_end",
        )
    )


def per_push_hour(pushes: DataFrame, instances: DataFrame) -> DataFrame:
    """Per instance and hour with pushes: landed, first/last push, and the longest gap ending in the hour.

    ``_gap_missed`` says whether a gap, less a re-subscription's pause (module docstring), exceeded
    ``GAP_AFTER`` times its own cadence; ``_missed_gap`` holds the one that exceeded it most (the gap as
    judged, and its cadence), for the reason.
    """
    ordered = Window.partitionBy("client_instance_id").orderBy("push_time")
    fallback = instances.select("client_instance_id", F.col("interval_seconds").alias("_instance_interval"))
    header = F.when(F.col("push_interval_ms") > 0, F.col("push_interval_ms"))
    with_cadence = (
        pushes.join(F.broadcast(fallback), "client_instance_id")
        .withColumn("_header_ms", header)
        .withColumn("_cadence", F.coalesce(F.col("_header_ms") / 1000.0, F.col("_instance_interval")))
    )
    resubscribed = F.coalesce(F.lag("_header_ms").over(ordered) != F.col("_header_ms"), F.lit(False))
    pause = F.when(resubscribed, F.lag("_cadence").over(ordered)).otherwise(F.lit(0.0))
    gap = _seconds(F.col("push_time")) - _seconds(F.lag("push_time").over(ordered))
    with_gaps = (
        with_cadence.withColumn("_gap", gap)
        .withColumn("_judged_gap", F.col("_gap") - pause)
        .withColumn("_overrun", F.col("_judged_gap") / F.col("_cadence"))
    )
    return (
        with_gaps.withColumn("hour_start", F.date_trunc("hour", "push_time"))
        .groupBy("client_instance_id", "hour_start")
        .agg(
            F.count(F.lit(1)).alias("landed_pushes"),
            F.min("push_time").alias("first_push_time"),
            F.max("push_time").alias("last_push_time"),
            F.max("_gap").alias("max_gap_seconds"),
            F.coalesce(F.max(F.col("_overrun") > GAP_AFTER), F.lit(False)).alias("_gap_missed"),
            F.max_by(
                F.struct(F.col("_judged_gap").alias("seconds"), F.col("_cadence").alias("cadence")),
                "_overrun",
            ).alias("_missed_gap"),
            F.max(F.col("terminating").cast("int")).alias("_has_terminating"),
        )
    )


def _expected_slots(hour_start: Column) -> Column:
    """Push slots ``first + k * interval`` inside ``[hour, hour + 1h) ∩ [first, expect_end)``."""
    first = _seconds(F.col("first_push"))
    step = F.col("interval_seconds")
    low = F.greatest(_seconds(hour_start), first)
    high = F.least(_seconds(hour_start) + HOUR, _seconds(F.col("expect_end")))
    slots = F.ceil((high - first) / step) - F.ceil((low - first) / step)
    return F.when(high > low, slots).otherwise(F.lit(0))


def instance_hours(instances: DataFrame, hourly: DataFrame, interval: Interval) -> DataFrame:
    """Every hour of the interval from an instance's first push to its expectation end, with its pushes."""
    first_hour = F.greatest(F.date_trunc("hour", "first_push"), F.lit(interval.hours[0]).cast("timestamp"))
    last_hour = F.least(
        F.date_trunc("hour", F.col("expect_end") - F.expr("INTERVAL 1 MICROSECOND")),
        F.lit(interval.hours[-1]).cast("timestamp"),
    )
    grid = instances.withColumn(
        "hour_start",
        F.explode(
            F.when(
                last_hour >= first_hour, F.sequence(first_hour, last_hour, F.expr("INTERVAL 1 HOUR"))
            ).otherwise(F.array(first_hour))
        ),
    )
    joined = grid.join(hourly, ["client_instance_id", "hour_start"], "left")
    # the final push is expected too: a terminating one, or the last push of an instance that ended (its
    # expectation ends at that push, and the slots before it do not hold it)
    final_push = F.coalesce(F.col("_has_terminating"), F.lit(0)) + ended_in_hour().cast("int")
    expected = _expected_slots(F.col("hour_start")) + final_push
    return joined.withColumns(
        {
            "expected_pushes": expected.cast("long"),
            "landed_pushes": F.coalesce(F.col("landed_pushes"), F.lit(0)).cast("long"),
        }
    )


def broker_client_counters(rolled: DataFrame) -> DataFrame:
    """Per instance key (either id form) and hour: throttled pushes and plugin errors the broker counted."""
    instance = F.col("attributes")["client_instance_id"]
    return (
        rolled.where(instance.isNotNull())
        .groupBy(instance.alias("instance_key"), F.col("bucket_start").alias("hour_start"))
        .agg(
            increase_of(BrokerMetric.THROTTLES).alias("throttled_pushes"),
            increase_of(BrokerMetric.PLUGIN_ERRORS).alias("plugin_errors"),
        )
    )


def broker_hours(rolled: DataFrame) -> DataFrame:
    """Per cluster, broker and hour: instance count, unknown-subscription requests, plugin drops."""
    is_count = F.col("metric_name") == BrokerMetric.INSTANCE_COUNT
    return rolled.groupBy("cluster_id", "broker_node_id", F.col("bucket_start").alias("hour_start")).agg(
        F.max(F.when(is_count, F.col("max"))).alias("instance_count_max"),
        increase_of(BrokerMetric.UNKNOWN_SUBSCRIPTION_REQUESTS).alias("unknown_subscription_requests"),
        increase_of(BrokerMetric.PLUGIN_DROPS).alias("plugin_dropped"),
    )


def _counted(column: str, before: str, after: str) -> Column:
    """``before<count>after`` when the row's ``column`` counted something, else null (a skipped part)."""
    count = F.col(column).cast("long").cast("string")
    return F.when(F.col(column) > 0, F.concat(F.lit(before), count, F.lit(after)))


def ended_in_hour() -> Column:
    """An instance-hour in which a client that sends no terminating push ended (its last landed push)."""
    hour_end = F.col("hour_start") + F.expr("INTERVAL 1 HOUR")
    return (
        F.col("ended_without_terminating")
        & (F.col("last_push") >= F.col("hour_start"))
        & (F.col("last_push") < hour_end)
    )


def reason_column() -> Column:
    """Why, in words, from the row's own figures and its broker's counters (null parts are skipped)."""
    since = F.date_format("silent_since", "yyyy-MM-dd'T'HH:mm:ss'Z'")
    return F.concat_ws(
        "; ",
        F.when(
            F.col("status") == "silent",
            F.concat(F.lit("no push since "), since, F.lit(" and no terminating push")),
        ),
        F.when(
            F.col("terminated") & F.col("_has_terminating").cast("boolean"),
            F.lit("closed (terminating push)"),
        ),
        F.when(
            ended_in_hour(),
            F.concat(
                F.lit("ended at "),
                F.date_format("last_push", "yyyy-MM-dd'T'HH:mm:ss'Z'"),
                F.lit(
                    ": this library sends no terminating push on close, "
                    "so a clean close and a crash look alike"
                ),
            ),
        ),
        _counted("throttled_pushes", "", " pushes throttled by the broker"),
        _counted("plugin_errors", "", " plugin errors for this client"),
        F.when(
            F.col("_gap_missed"),
            F.concat(
                F.lit("longest gap "),
                F.format_number("_missed_gap.seconds", 1),
                F.lit(" s for a "),
                F.format_number("_missed_gap.cadence", 1),
                F.lit(" s interval"),
            ),
        ),
        _counted("unknown_subscription_requests", "broker counted ", " unknown-subscription requests"),
        _counted("plugin_dropped", "plugin dropped ", " records"),
    )
