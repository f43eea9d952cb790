"""What the page shows from one zone's analytics: anomalies, clients, their top metrics, broker health.

Pure functions over the DataFrames from ``analytics.tables`` so they are testable without a server.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

RECENT_ANOMALIES = 50

ANOMALY_COLUMNS = [
    "severity",
    "kind",
    "baseline_kind",
    "peer_group",
    "rule_name",
    "client_id",
    "client_instance_id",
    "client_software_name",
    "metric_name",
    "field",
    "peak_value",
    "threshold",
    "excess_ratio",
    "breach_start",
    "breach_end",
    "duration_seconds",
    "description",
]
BROKER_COLUMNS = [
    "bucket_start",
    "bucket_end",
    "cluster_id",
    "broker_node_id",
    "instance_count",
    "pushes_exported",
    "throttled_pushes",
    "throttle_ratio",
    "unknown_subscription_requests",
    "plugin_errors",
    "plugin_error_ratio",
    "export_time_avg_ms",
    "export_time_max_ms",
    "plugin_failing",
    "throttled_clients",
]


LIBRARY_COLUMNS = (
    ("library", "library"),
    ("metrics", "metrics pushed"),
    ("instances", "instances"),
    ("push_bytes", "est. push of all (bytes)"),
    ("last_seen", "last seen"),
)


@dataclass(frozen=True)
class ClientSummary:
    client_instance_id: str
    client_id: str
    software: str
    rollup_rows: int
    anomalies: int


def recent_anomalies(anomalies: pd.DataFrame, limit: int = RECENT_ANOMALIES) -> pd.DataFrame:
    """The newest breaches first (critical before warning on ties)."""
    if anomalies.empty:
        return anomalies
    ordered = anomalies.assign(_critical=anomalies["severity"].eq("critical"))
    ordered = ordered.sort_values(["breach_end", "_critical"], ascending=[False, False])
    return ordered[[c for c in ANOMALY_COLUMNS if c in ordered.columns]].head(limit)


def client_rollups(rollups: pd.DataFrame) -> pd.DataFrame:
    """Rollup rows about clients (broker records carry no client instance id)."""
    if rollups.empty or "client_instance_id" not in rollups.columns:
        return rollups.iloc[0:0]
    return rollups[rollups["client_instance_id"].notna() & rollups["client_instance_id"].ne("")]


def clients(rollups: pd.DataFrame, anomalies: pd.DataFrame) -> list[ClientSummary]:
    """Every client seen in the rollups, the ones with most anomalies first."""
    rows = client_rollups(rollups)
    if rows.empty:
        return []
    anomaly_counts = (
        anomalies.groupby("client_instance_id").size() if not anomalies.empty else pd.Series(dtype=int)
    )
    summaries = []
    for instance_id, group in rows.groupby("client_instance_id"):
        first = group.iloc[0]
        software = " ".join(
            str(part)
            for part in (first.get("client_software_name"), first.get("client_software_version"))
            if isinstance(part, str) and part
        )
        summaries.append(
            ClientSummary(
                client_instance_id=str(instance_id),
                client_id=str(first.get("client_id") or ""),
                software=software,
                rollup_rows=len(group),
                anomalies=int(anomaly_counts.get(instance_id, 0)),
            )
        )
    return sorted(summaries, key=lambda c: (-c.anomalies, c.client_id, c.client_instance_id))


def metric_series(rollups: pd.DataFrame, client_instance_id: str, metric_name: str) -> pd.DataFrame:
    """bucket_start, attributes_key, value (``signal``, else ``avg``) for one client's metric."""
    rows = client_rollups(rollups)
    rows = rows[(rows["client_instance_id"] == client_instance_id) & (rows["metric_name"] == metric_name)]
    if rows.empty:
        return pd.DataFrame(columns=["bucket_start", "attributes_key", "value"])
    value = rows["signal"] if "signal" in rows.columns else rows["avg"]
    if "avg" in rows.columns:
        value = value.fillna(rows["avg"])
    series = pd.DataFrame(
        {
            "bucket_start": rows["bucket_start"],
            "attributes_key": rows.get("attributes_key", pd.Series("", index=rows.index)).fillna(""),
            "value": value,
        }
    )
    return series.dropna(subset=["value"]).sort_values("bucket_start")


def broker_latest(broker_metrics: pd.DataFrame) -> pd.DataFrame:
    """Each broker's newest bucket: the health line the page leads with."""
    if broker_metrics.empty:
        return broker_metrics
    ordered = broker_metrics.sort_values("bucket_start")
    latest = ordered.groupby(["cluster_id", "broker_node_id"], dropna=False).tail(1)
    return latest[[c for c in BROKER_COLUMNS if c in latest.columns]].sort_values("broker_node_id")


def broker_totals(broker_metrics: pd.DataFrame) -> dict[str, float]:
    """Sums over the whole table: pushes, throttles, unknown-subscription requests, plugin errors."""
    totals: dict[str, float] = {}
    for column in ("pushes_exported", "throttled_pushes", "unknown_subscription_requests", "plugin_errors"):
        if column in broker_metrics.columns:
            totals[column] = float(broker_metrics[column].fillna(0).sum())
    return totals


def library_capabilities(capabilities: pd.DataFrame) -> pd.DataFrame:
    """Per client library and version: metrics pushed, most instances seen, the guardrail's estimate of
    one push of all of them (``troubleshooting.guardrails.estimate_push_bytes``) and when last seen."""
    from airflow_provider_kip714.troubleshooting.guardrails import Capability, estimate_push_bytes

    if capabilities.empty:
        return capabilities
    latest = capabilities.sort_values("last_seen").drop_duplicates(
        ["client_software_name", "client_software_version", "metric_name"], keep="last"
    )
    rows = []
    for (name, version), part in latest.groupby(["client_software_name", "client_software_version"]):
        pushed = [
            Capability(str(name), str(version), str(metric), float(points) if pd.notna(points) else 1.0)
            for metric, points in zip(part["metric_name"], part["points_per_push"], strict=True)
        ]
        rows.append(
            {
                "library": f"{name} {version}",
                "metrics": len(pushed),
                "instances": int(part["instances"].max()),
                "push_bytes": estimate_push_bytes(pushed),
                "last_seen": part["last_seen"].max(),
            }
        )
    return pd.DataFrame(rows).sort_values("library")
