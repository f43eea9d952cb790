"""The FastAPI app behind the "Client telemetry" page, mounted by the plugin under ``/kip714``.

Every route needs an Airflow user (the UI's JWT cookie, as for Airflow's own API); a browser
without one is sent to Airflow's login page. All links are relative, so the page works both
directly and inside the UI's iframe.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
from fastapi import Depends, FastAPI, HTTPException, Query, Request, status
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape

from airflow_provider_kip714.analytics import tables as analytics_tables
from airflow_provider_kip714.ui import charts, report_files, telemetry_view
from airflow_provider_kip714.ui.subscriptions_view import load_subscriptions

TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(["html"]),
)
PNG_HEADERS = {"Cache-Control": "no-store"}
ROLLUP_LISTING_COLUMNS = [
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "metric_name",
]
ROLLUP_CHART_COLUMNS = [*ROLLUP_LISTING_COLUMNS, "bucket_start", "attributes_key", "signal", "avg"]


def _require_user() -> list[Any]:
    """Airflow's own authentication dependency (absent only when running outside Airflow)."""
    from airflow.api_fastapi.core_api.security import get_user

    return [Depends(get_user)]


def _zone_or_404(key: str) -> analytics_tables.ZoneChoice:
    choice = analytics_tables.find_zone(key)
    if choice is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"zone: no analytics zone named {key!r}")
    return choice


def _format_cell(value: object) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)) or value is pd.NaT:
        return ""
    if isinstance(value, pd.Timestamp | datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _records(frame: pd.DataFrame) -> list[dict[str, str]]:
    return [
        {column: _format_cell(value) for column, value in row.items()} for row in frame.to_dict("records")
    ]


def render_page(zone_key: str, client: str | None) -> str:
    """Gather everything the page shows; each section copes with missing data on its own."""
    choice = _zone_or_404(zone_key)
    now = datetime.now(UTC)
    rollups = analytics_tables.read_table(choice.zone, "rollups", columns=ROLLUP_LISTING_COLUMNS)
    anomalies = analytics_tables.read_table(choice.zone, "anomalies")
    broker_metrics = analytics_tables.read_table(choice.zone, "broker_metrics")
    clients = telemetry_view.clients(rollups, anomalies)
    selected = next((c for c in clients if c.client_instance_id == client), clients[0] if clients else None)
    metrics = telemetry_view.top_metrics(rollups, selected.client_instance_id, anomalies) if selected else []
    subscriptions = load_subscriptions()
    template = TEMPLATES.get_template("telemetry.html")
    return template.render(
        now=now,
        zone=choice,
        zones=analytics_tables.zone_choices(),
        analytics_path=str(choice.zone.analytics),
        subscriptions=subscriptions,
        anomalies=_records(telemetry_view.recent_anomalies(anomalies)),
        anomaly_count=len(anomalies),
        anomaly_columns=telemetry_view.ANOMALY_COLUMNS,
        rollup_rows=len(rollups),
        clients=clients,
        selected=selected,
        metrics=metrics,
        brokers=_records(telemetry_view.broker_latest(broker_metrics)),
        broker_columns=telemetry_view.BROKER_COLUMNS,
        broker_totals=telemetry_view.broker_totals(broker_metrics),
    )


def client_chart(zone_key: str, client: str, metric: str) -> bytes:
    zone = _zone_or_404(zone_key).zone
    selected = {"client_instance_id": client, "metric_name": metric}
    rollups = analytics_tables.read_table(zone, "rollups", columns=ROLLUP_CHART_COLUMNS, equal=selected)
    anomalies = analytics_tables.read_table(zone, "anomalies", equal=selected)
    thresholds = analytics_tables.read_table(zone, "thresholds", equal={"metric_name": metric})
    series = telemetry_view.metric_series(rollups, client, metric)
    breaches = anomalies  # already this client's and this metric's
    levels = sorted({float(v) for v in breaches.get("threshold", pd.Series(dtype=float)).dropna()})[:3]
    if not levels and not thresholds.empty:
        static = thresholds[(thresholds["metric_name"] == metric) & (thresholds["kind"] == "static")]
        levels = sorted({float(v) for v in static["threshold"].dropna()})[:3]
    label = str(rollups["client_id"].iloc[0]) if not rollups.empty else client
    return charts.client_metric_png(series, metric, label, levels, breaches)


def create_app() -> FastAPI:
    app = FastAPI(
        title="KIP-714 client telemetry", dependencies=_require_user(), docs_url=None, redoc_url=None
    )

    @app.exception_handler(HTTPException)
    async def login_redirect(request: Request, err: HTTPException) -> Response:
        if err.status_code == status.HTTP_401_UNAUTHORIZED and request.method == "GET":
            from airflow.api_fastapi.app import get_auth_manager

            return RedirectResponse(get_auth_manager().get_url_login(next_url=str(request.url)))
        return HTMLResponse(f"<p>{err.status_code}: {err.detail}</p>", status_code=err.status_code)

    @app.get("/", response_class=HTMLResponse)
    def page(zone: str = analytics_tables.SCHEDULED_ZONE_KEY, client: str | None = None) -> HTMLResponse:
        return HTMLResponse(render_page(zone, client))

    @app.get("/charts/client.png")
    def client_png(
        client: str = Query(min_length=1),
        metric: str = Query(min_length=1),
        zone: str = analytics_tables.SCHEDULED_ZONE_KEY,
    ) -> Response:
        return Response(client_chart(zone, client, metric), media_type="image/png", headers=PNG_HEADERS)

    @app.get("/charts/brokers.png")
    def brokers_png(zone: str = analytics_tables.SCHEDULED_ZONE_KEY) -> Response:
        broker_metrics = analytics_tables.read_table(_zone_or_404(zone).zone, "broker_metrics")
        return Response(charts.broker_health_png(broker_metrics), media_type="image/png", headers=PNG_HEADERS)

    @app.get("/reports/{run_folder}/")
    def report_index(run_folder: str) -> Response:
        return RedirectResponse("report.html")

    @app.get("/reports/{run_folder}/{file_name}")
    def report(run_folder: str, file_name: str) -> Response:
        path = report_files.report_file(run_folder, file_name)
        if path is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, "report: no such report file")
        return FileResponse(path, media_type=report_files.media_type(path))

    return app
