"""Regenerate ``docs/images/ui-panels.png``: the Client telemetry page with the fleet-health panels.

    .venv/bin/python -m tests.support.ui_screenshot [--out docs/images/ui-panels.png]

Everything in the picture is real except the Spark outputs: a local Kafka 4.4 with the broker plugin
(``kip714 local-kafka``'s code), a window subscription on it with real librdkafka producers pushing
under it and the real lander landing them into a ``kip714_troubleshoot`` run folder (so the *live*
convergence panel has an open window to follow), the demo fleet's analytics tables
(``ui_demo_data.py``: silent clients, a finished window's convergence, capabilities, a peer anomaly),
a real ``airflow api-server`` with the plugin, and Debian's headless Chromium (``make browser``)
logged in with a token from ``POST /auth/token``. Takes about a minute; leaves nothing running.
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from confluent_kafka import Producer
from kip714_dev.local_kafka.cluster_factory import LocalKafkaClusterFactory

from airflow_provider_kip714.analytics.run_owner import write_run_owner
from airflow_provider_kip714.storage.data_root import DATA_DIR_ENV, scheduled_area, troubleshoot_area
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.subscriptions.model import Subscription
from airflow_provider_kip714.subscriptions.window_name import format_window_name, random_suffix
from airflow_provider_kip714.telemetry.landing import land_topic
from airflow_provider_kip714.troubleshooting.window import write_convergence_windows
from tests.support.ui_demo_data import land_demo_analytics
from tests.ui.airflow_server import start_api_server

DEFAULT_OUT = Path(__file__).resolve().parents[2] / "docs" / "images" / "ui-panels.png"
RUN_ID = "manual__2026-11-24T05:00:00+00:00"
WIDTH_PX = 1100
"""Final width: readable tables, a PNG of a few hundred KB at most."""


def open_live_window(
    config: dict, data_dir: Path, admin: ClientMetricsAdmin, seconds: float = 8
) -> Subscription:
    """A 20-minute window on orders-*, recorded as the DAG records it, pushed to and landed."""
    subscribed_at = datetime.now(UTC)
    expires_at = (subscribed_at + timedelta(minutes=20)).replace(microsecond=0)
    match = {"client_id": "orders-.*"}
    window = Subscription.from_spec(
        name=format_window_name("troubleshoot", expires_at, random_suffix()),
        metrics=["org.apache.kafka.producer."],
        interval_ms=1000,
        match=match,
        expires_at=expires_at,
    )
    admin.upsert(window)
    area = troubleshoot_area(RUN_ID, data_dir)
    write_run_owner(area, "kip714_troubleshoot", RUN_ID)
    bounds = {"name": window.name, "start": subscribed_at.isoformat(), "end": expires_at.isoformat()}
    write_convergence_windows(area, bounds, list(window.metrics), match)
    tag = uuid.uuid4().hex[:4]
    producers = [Producer({**config, "client.id": f"orders-{role}-{tag}"}) for role in ("api", "batch")]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for producer in producers:
            producer.poll(0.1)
    del producers
    land_topic(config, "_client_telemetry", area.landing, since=subscribed_at - timedelta(seconds=60))
    return window


def capture(base_url: str, token: str, out: Path, profile: Path) -> None:
    """Open the page itself (not Airflow's frame, so every panel fits) and save it, scaled down."""
    from PIL import Image

    from tests.ui.chromium import start_chromium

    driver = start_chromium(profile)
    try:
        driver.get(f"{base_url}/api/v2/monitor/health")
        driver.add_cookie({"name": "_token", "value": token, "path": "/"})
        driver.get(f"{base_url}/kip714/")
        time.sleep(3)  # the chart images
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(1400, min(int(height) + 120, 6000))
        time.sleep(1)
        shot = Image.open(io.BytesIO(driver.get_screenshot_as_png())).convert("RGB")
    finally:
        driver.quit()
    scaled = shot.resize((WIDTH_PX, round(shot.height * WIDTH_PX / shot.width)), Image.Resampling.LANCZOS)
    out.parent.mkdir(parents=True, exist_ok=True)
    scaled.quantize(colors=128).save(out, optimize=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"PNG to write (default {DEFAULT_OUT})")
    out = parser.parse_args().out
    with (
        tempfile.TemporaryDirectory(prefix="kip714-screenshot-") as tmp,
        LocalKafkaClusterFactory(Path(tmp) / "kafka") as factory,
    ):
        cluster = factory.start(name="screenshot-kafka")
        if not cluster.plugin_loaded:
            raise SystemExit("broker plugin jar not built: run `make plugin`")
        data_dir = Path(tmp) / "kip714-data"
        land_demo_analytics(scheduled_area(data_dir).analytics, datetime.now(UTC))
        config = cluster.client_config()
        with ClientMetricsAdmin(to_kafka_python_kwargs(config)) as admin:
            open_live_window(config, data_dir, admin)
            server = start_api_server(
                Path(tmp) / "airflow", cluster.bootstrap_servers, {DATA_DIR_ENV: str(data_dir)}
            )
            try:
                capture(server.base_url, server.token(), out, Path(tmp) / "chromium")
            finally:
                server.stop()
    print(f"wrote {out} ({out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
