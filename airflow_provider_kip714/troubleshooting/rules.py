"""The window's rules file: the form's thresholds as static rules for the anomalies app.

One schema: each rule is built by ``spark_apps/kip714_common/rules.py``'s ``rule_entry`` and the document
is checked with its ``parse_rules`` (what ``load_rules``, the Spark app's loader, runs on the decoded
file) before it is written, so a file the app would refuse fails here, naming the rule and the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from airflow_provider_kip714.analytics.tables import client_metric_names
from airflow_provider_kip714.contract.selectors import RULE_SELECTORS
from airflow_provider_kip714.exceptions import SubscriptionValidationError
from airflow_provider_kip714.storage.data_root import RunArea
from airflow_provider_kip714.troubleshooting.request import TroubleshootingRequest
from spark_apps.kip714_common.errors import SparkAppInputError
from spark_apps.kip714_common.metric_names import normalise_metric_name
from spark_apps.kip714_common.rules import RULE_NAME_MAX_LENGTH, parse_rules, rule_entry

RULES_FILE: Final = "rules.json"
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def rule_name(index: int, metric_index: int, metric: str) -> str:
    """Unique per threshold and metric, within the loader's name rule whatever the metric is called."""
    head = f"threshold{index}-m{metric_index}-"
    return head + (_UNSAFE_NAME.sub("_", metric) or "metric")[: RULE_NAME_MAX_LENGTH - len(head)]


def window_rules(
    request: TroubleshootingRequest, metric_names: Sequence[str], default_rules: Path | None
) -> dict[str, Any]:
    """The rules document for the anomalies app: default rules plus one rule per threshold x metric."""
    rules: list[dict[str, Any]] = []
    if request.use_default_rules and default_rules is not None:
        rules.extend(json.loads(default_rules.read_text())["rules"])
    match = {k: v for k, v in request.match_map().items() if k in RULE_SELECTORS}
    for index, threshold in enumerate(request.thresholds):
        prefix = normalise_metric_name(threshold.metric_prefix, {})  # steps 1-2 on a prefix
        for metric_index, metric in enumerate(metric_names):
            if not metric.startswith(prefix):
                continue
            rules.append(
                rule_entry(
                    name=rule_name(index, metric_index, metric),
                    description=f"form threshold on {threshold.metric_prefix}",
                    metric=metric,
                    field=threshold.field,
                    comparison=threshold.comparison,
                    threshold=threshold.threshold,
                    for_seconds=threshold.for_seconds,
                    match=match,
                    critical_threshold=threshold.critical_threshold,
                )
            )
    return {"rules": rules}


def checked_rules_text(document: dict[str, Any]) -> str:
    """The file's text, after the anomalies app's own loader accepted it (else a one-line error)."""
    try:
        text = json.dumps(document, indent=2, allow_nan=False)
        parse_rules(json.loads(text))
    except (SparkAppInputError, ValueError) as err:
        raise SubscriptionValidationError("thresholds", f"the rules file would be refused: {err}") from None
    return text


def landed_client_metric_names(area: RunArea) -> list[str]:
    """Client metric names in the zone's landing ``datapoints/``, named as the rollups name them.

    The rules can then be written before the one Spark application that rolls up and judges the window
    (``spark_apps/pipeline.py``). A window's landing zone holds the window and the minute before it, so
    the names are those of the rollups or a few more (a rule for a metric no point has matches nothing).
    """
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    from airflow_provider_kip714.contract.topic import DEFAULT_TELEMETRY_TOPIC
    from airflow_provider_kip714.telemetry.landing_zone import LandingZone

    # Committed chunks only (the landing zone's protocol); the topic name plays no part in reading.
    filesystem, files = LandingZone(area.landing, DEFAULT_TELEMETRY_TOPIC).arrow_files("datapoints")
    if not files:
        return []
    dataset = ds.dataset(files, filesystem=filesystem, format="parquet")
    names = dataset.to_table(columns=["metric_name"], filter=ds.field("record_type") == "client")
    return sorted({normalise_metric_name(v, {}) for v in pc.unique(names["metric_name"]).to_pylist() if v})


def write_window_rules(
    area: RunArea, request: TroubleshootingRequest, default_rules: Path | None
) -> tuple[Path, int]:
    """Write ``<zone>/rules.json`` for this window; returns its path and how many rules it holds.

    The metric names come from the zone's rollups when written, else from its landing zone (the DAG
    writes the rules before the Spark application that writes the rollups).
    """
    names = client_metric_names(area) or landed_client_metric_names(area)
    document = window_rules(request, names, default_rules)
    text = checked_rules_text(document)
    path = area.root / RULES_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path, len(document["rules"])
