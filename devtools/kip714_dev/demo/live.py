"""The demo's live fleet health: live mode's cycles, the alert they send, the window a finding opens.

The demo runs no Airflow scheduler, so it calls what the three live DAGs run, in its own process:

- ``kip714_live``: ``begin_cycle`` -> land what is new into the scheduled zone -> the pipeline over the
  trailing window on the demo's Spark Connect server -> ``detect`` -> ``announce``. The events the DAG
  adds to the ``kip714_findings`` Asset are kept in memory here, as Airflow would hold them, so a cycle
  announces each transition once;
- ``kip714_alerts``: ``receive`` and ``deliver`` through the SMTP provider's ``SmtpNotifier`` to a real
  SMTP server the demo starts on 127.0.0.1 (``kip714_dev.smtp_sink``); each mail that arrives is printed
  as ``alert received: <subject>``;
- ``kip714_auto_window``: ``open_windows``, with its guardrails, for the slow consumer's finding (in
  production every opened finding asks, within the guardrails). The demo then runs the window's conf
  through ``airflow dags test kip714_troubleshoot`` like any window: ``window opened by finding: ...``.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

from airflow_provider_kip714.contract.client_text import printable
from airflow_provider_kip714.findings.alert_channels import SmtpChannel
from airflow_provider_kip714.findings.alert_settings import AlertSettings
from airflow_provider_kip714.findings.alerts import deliver, receive
from airflow_provider_kip714.findings.announce import announce, announced_keys
from airflow_provider_kip714.findings.model import Finding, FindingKind, Transition
from airflow_provider_kip714.findings.store import LiveStore
from airflow_provider_kip714.live.cycle import begin_cycle, detect
from airflow_provider_kip714.live.settings import LiveSettings
from airflow_provider_kip714.storage.data_root import live_area, scheduled_area
from airflow_provider_kip714.telemetry.landing import land_topic
from airflow_provider_kip714.troubleshooting.auto_window import AutoWindowSettings, WindowPlan, open_windows
from airflow_provider_kip714.troubleshooting.guardrails import load_capabilities_of, visible_areas
from kip714_dev.demo.spark_server import DemoSparkServer
from kip714_dev.smtp_sink import SmtpSink
from spark_apps.package import DEFAULT_RULES, application_args

SETTINGS: Final = LiveSettings(
    lookback=timedelta(minutes=2), bucket=timedelta(seconds=10), baseline_for=timedelta(seconds=20)
)
"""A shorter lookback than production's 3 minutes: the demo's fleet has run for about two."""
SMTP_CONN_ID: Final = "kip714_demo_smtp"
ALERTS: Final = AlertSettings(
    to=("oncall@localhost",), smtp_conn_id=SMTP_CONN_ID, from_email="kip714@localhost"
)
CYCLE_PAUSE_S: Final = 5.0


@dataclass
class LiveCycle:
    number: int
    landed: int
    seconds: float
    data_through: datetime
    changed: list[Finding]


@dataclass
class LiveDemo:
    """Live mode over the demo's fleet, until a finding names ``target_client_id``."""

    bootstrap: str
    topic: str
    spark: DemoSparkServer
    log_dir: Path
    target_client_id: str
    telemetry_max_bytes: int | None = None
    sink: SmtpSink | None = None
    """Where ``alert`` mails go; None: no alerts (the live-failure tests)."""
    store: LiveStore = field(default_factory=LiveStore)
    events: list[dict[str, Any]] = field(default_factory=list)
    """The ``kip714_findings`` events announced so far (what Airflow would hold)."""

    def add(self, asset: Any, extra: dict[str, Any] | None = None) -> None:
        """``announce``'s event sink (``outlet_events[...]``)."""
        self.events.append({"extra": extra})

    def cycle(self, number: int) -> LiveCycle:
        """One ``kip714_live`` run: land what is new, analyse the trailing window, announce transitions."""
        began = time.monotonic()
        scheduled, live = scheduled_area(), live_area()
        plan = begin_cycle(
            self.store, scheduled.landing, self.topic, datetime.now(UTC), SETTINGS, hourly=scheduled
        )
        landed = land_topic({"bootstrap.servers": self.bootstrap}, self.topic, str(scheduled.landing))
        args = application_args(
            str(scheduled.landing),
            str(live.analytics),
            plan.start.isoformat(),
            plan.end.isoformat(),
            SETTINGS.bucket_flag,
            rules=str(DEFAULT_RULES),
            history=f"{int(SETTINGS.history.total_seconds())}s",
            history_root=str(scheduled.analytics),
            history_end=plan.history_end_flag(),
            baselines_cache=plan.baselines_cache_flag(),
            baseline_for=f"{int(SETTINGS.baseline_for.total_seconds())}s",
            chunks_from=plan.chunks_flag(),
            connect_session=plan.spark_session,
        )
        self.spark.run_app("pipeline", args, self.log_dir / "live-cycles.log")
        detect(self.store, live, plan.end, datetime.now(UTC), f"demo-cycle-{number}", window_start=plan.start)
        changed = announce(self.store, self, announced_keys(self.events), None)
        return LiveCycle(number, landed.records, time.monotonic() - began, plan.end, changed)

    def until_target_found(self, timeout_s: float, not_before: datetime) -> Finding | None:
        """Cycle back to back until an anomaly of the target client opens and the fleet has pushed until
        ``not_before`` (history for the window that follows); None after ``timeout_s``."""
        logging.getLogger("airflow_provider_kip714.live.cycle").setLevel(logging.WARNING)  # printed below
        deadline = time.monotonic() + timeout_s
        number, found = 0, None
        while time.monotonic() < deadline:
            result = self.cycle(number)
            age = (datetime.now(UTC) - result.data_through).total_seconds()
            print(
                f"  live cycle {number}: landed {result.landed} records, analysed the last "
                f"{int(SETTINGS.lookback.total_seconds())} s in {result.seconds:.1f} s "
                f"(findings {age:.0f} s after the newest data)",
                flush=True,
            )
            for finding in result.changed:
                print(f"    finding {finding.transition.value}: {_described(finding)}", flush=True)
            self.alert(result.changed)
            found = found or next((f for f in result.changed if self._is_target(f)), None)
            if found is not None and datetime.now(UTC) >= not_before:
                return found
            number += 1
            time.sleep(CYCLE_PAUSE_S)
        return None

    def _is_target(self, finding: Finding) -> bool:
        return (
            finding.transition is Transition.OPENED
            and finding.kind is FindingKind.ANOMALY
            and finding.client.client_id == self.target_client_id
        )

    def alert(self, findings: list[Finding]) -> None:
        """``kip714_alerts`` for these findings: mail them, then print what the SMTP server received."""
        if not findings or self.sink is None:
            return
        before = len(self.sink.mails)
        now = datetime.now(UTC)
        receive(self.store, findings, 0, now, ALERTS)
        outcome = deliver(self.store, ALERTS, SmtpChannel(ALERTS), {}, now)
        for mail in self.sink.wait_for(before + outcome.mails + outcome.digests, timeout_s=30)[before:]:
            print(f"  alert received: {printable(mail.subject, 200)}", flush=True)

    def open_window(self, finding: Finding, window_minutes: int) -> WindowPlan | None:
        """``kip714_auto_window`` for ``finding``: the plan its guardrails allow (recorded), or None."""
        settings = AutoWindowSettings(
            enabled=True, window_minutes=window_minutes, telemetry_max_bytes=self.telemetry_max_bytes
        )
        capabilities = load_capabilities_of(visible_areas())
        plans = open_windows(self.store, [finding], settings, capabilities, datetime.now(UTC), live_area())
        for refusal in plans.refusals:
            print(f"  no window: {refusal.guardrail}: {printable(refusal.reason, 300)}", flush=True)
        return plans.windows[0] if plans.windows else None


def _described(finding: Finding) -> str:
    return printable(
        f"{finding.severity.value} {finding.kind.value} {finding.subject}: {finding.summary}", 300
    )


def window_line(finding: Finding, plan: WindowPlan) -> str:
    """The demo's ``window opened by finding:`` line."""
    seconds, interval_ms = plan.conf["window_seconds"], plan.conf["interval_ms"]
    instance = plan.record.client_instance_ids[0]
    return (
        f"window opened by finding: {_described(finding)} -> {seconds} s at {interval_ms} ms for client "
        f"instance {instance} (kip714_auto_window triggers it as run {plan.run_id}; the demo runs its conf "
        "with airflow dags test)"
    )


@contextmanager
def demo_mail_server() -> Iterator[SmtpSink]:
    """The demo's SMTP server, and the Airflow connection to it (in this process's environment)."""
    logging.getLogger("mail.log").setLevel(logging.WARNING)  # aiosmtpd narrates every SMTP command
    with SmtpSink.start() as sink:
        variable = f"AIRFLOW_CONN_{SMTP_CONN_ID.upper()}"
        os.environ[variable] = json.dumps(sink.connection())
        try:
            yield sink
        finally:
            os.environ.pop(variable, None)
