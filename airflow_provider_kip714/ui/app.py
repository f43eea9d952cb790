"""The FastAPI app behind the "Client telemetry" page, mounted by the plugin under ``/kip714``.

Every route needs an Airflow user (the UI's JWT cookie, as for Airflow's own API); a browser
without one is sent to Airflow's login page. What that user may see is Airflow's auth manager's
decision (``access.py``). Client-controlled text (client ids, metric names, labels) and request
text are data: templates autoescape, and error answers are plain text. All links are relative,
so the page works both directly and inside the UI's iframe.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
from fastapi import Depends, FastAPI, HTTPException, Query, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, PlainTextResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup
from starlette.exceptions import HTTPException as StarletteHTTPException

from airflow_provider_kip714.analytics import plots
from airflow_provider_kip714.analytics.run_owner import SCHEDULED_DAG_ID
from airflow_provider_kip714.analytics.tables import capabilities_of, read_table
from airflow_provider_kip714.contract.client_text import printable
from airflow_provider_kip714.report import cards, fleet_health, html
from airflow_provider_kip714.ui import access, findings_view, report_files, telemetry_view
from airflow_provider_kip714.ui.convergence_view import live_convergence
from airflow_provider_kip714.ui.runs import SCHEDULED_KEY, RunChoice, find_run, run_choices
from airflow_provider_kip714.ui.subscriptions_view import (
    SubscriptionsView,
    configured_conn_id,
    load_subscriptions,
)

TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=True,  # every template, whatever its name: nothing it renders is trusted markup
)
TEMPLATES.filters["printable"] = printable
PNG_HEADERS = {"Cache-Control": "no-store"}
TEXT_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
REFRESH_SECONDS = 30
"""The page reloads itself this often while live mode's state is shown (filters are in the URL)."""
ROLLUP_LISTING_COLUMNS = [
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "metric_name",
]
ROLLUP_CHART_COLUMNS = [*ROLLUP_LISTING_COLUMNS, "bucket_start", "attributes_key", "signal", "avg"]


def _run_or_404(key: str, user: Any) -> RunChoice:
    """The run the user asked for; 404 alike for unknown runs and runs the user may not read."""
    choice = find_run(key)
    if choice is None or not access.may_read_runs(user, choice.owner_dag_id):
        raise HTTPException(status.HTTP_404_NOT_FOUND, "run: no such run, or not yours to read")
    return choice


def visible_runs(user: Any) -> list[RunChoice]:
    return [choice for choice in run_choices() if access.may_read_runs(user, choice.owner_dag_id)]


def _subscriptions(user: Any) -> SubscriptionsView:
    if access.may_read_subscriptions(user):
        return load_subscriptions()
    hidden = ", ".join(access.subscription_dag_ids())
    return SubscriptionsView(
        conn_id=configured_conn_id(), error=f"hidden: you may not read the DAGs using it ({hidden})"
    )


def _format_cell(value: object) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)) or value is pd.NaT:
        return ""
    if isinstance(value, pd.Timestamp | datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, float):
        return f"{value:.4g}"
    return printable(value)  # control and direction characters shown as escapes


def _records(frame: pd.DataFrame) -> list[dict[str, str]]:
    return [
        {column: _format_cell(value) for column, value in row.items()} for row in frame.to_dict("records")
    ]


def _content_html(view: findings_view.RunView) -> dict[str, Markup]:
    """The findings and metric sections, built by the report's escaping renderers, and the chart data."""
    content = view.content
    parts = [cards.card(c.finding, c.chart.chart_id if c.chart else None, c.details) for c in content.cards]
    overflow = cards.overflow_table([c.finding for c in content.overflow]) if content.overflow else ""
    metrics = [chart.placeholder() for chart in content.metrics.charts]
    if content.metrics.quiet:
        names = ", ".join(html.text(name, 160) for name in content.metrics.quiet)
        metrics.append(
            f"<p class='muted quiet'>Zero for every client ({len(content.metrics.quiet)}): {names}.</p>"
        )
    charts = [c.chart for c in content.cards if c.chart] + list(content.metrics.charts)
    if content.broker_chart is not None:
        charts.append(content.broker_chart)
    data = {"charts": [chart.as_json() for chart in charts], "palette": content.palette.as_json()}
    return {
        "cards_html": Markup("".join(parts)),
        "overflow_html": Markup(overflow),
        "metrics_html": Markup("".join(metrics)),
        "broker_chart_html": Markup(content.broker_chart.placeholder() if content.broker_chart else ""),
        # json_block escapes < > & inside the JSON; the chart code is this package's own files
        "charts_html": Markup(html.json_block(html.DATA_ID, data) + html.inline_chart_code()),
    }


def render_page(run_key: str, filters: findings_view.Filters, user: Any) -> str:
    """Gather everything the page shows; each section copes with missing data on its own."""
    choice = _run_or_404(run_key, user)
    now = datetime.now(UTC)
    view = findings_view.run_view(choice.area, filters)
    broker_metrics = read_table(choice.area, "broker_metrics")
    delivery = read_table(choice.area, "delivery")
    silent, _ = fleet_health.delivery_rows(delivery)
    windows, _ = fleet_health.convergence_rows(read_table(choice.area, "convergence"))
    subscriptions = _subscriptions(user)
    runs = visible_runs(user)
    live = (
        findings_view.live_view(None, now)
        if access.may_read_runs(user, SCHEDULED_DAG_ID)
        else findings_view.LiveView(
            None, [], [], error="hidden: you may not read the runs of the scheduled DAGs"
        )
    )
    template = TEMPLATES.get_template("telemetry.html")
    return template.render(
        now=now,
        run=choice,
        runs=runs,
        analytics_path=str(choice.area.analytics),
        subscriptions=subscriptions,
        filters=filters,
        choices=view.choices,
        since=view.since,
        findings_count=view.content.findings,
        clients_count=len(view.content.identities),
        live=live,
        live_cards=Markup("".join(cards.card(f, None, now=now) for f in live.open_findings)),
        age_text=cards.age_text,
        refresh_seconds=REFRESH_SECONDS,
        anomalies=_records(telemetry_view.recent_anomalies(view.anomalies)),
        anomaly_count=len(view.anomalies),
        anomaly_columns=telemetry_view.ANOMALY_COLUMNS,
        rollup_rows=view.rollup_rows,
        brokers=_records(telemetry_view.broker_latest(broker_metrics)),
        broker_columns=telemetry_view.BROKER_COLUMNS,
        broker_totals=telemetry_view.broker_totals(broker_metrics),
        silent=_records(silent),
        silent_columns=fleet_health.SILENT_COLUMNS,
        delivery_rows=len(delivery),
        convergence=_records(windows),
        convergence_columns=fleet_health.CONVERGENCE_WINDOW_COLUMNS,
        active_names={row.name for row in subscriptions.rows},
        live_convergence=live_convergence(subscriptions, runs, datetime.now(UTC)),
        libraries=_records(telemetry_view.library_capabilities(capabilities_of(choice.area))),
        library_columns=telemetry_view.LIBRARY_COLUMNS,
        **_content_html(view),
    )


def client_chart(choice: RunChoice, client: str, metric: str) -> bytes:
    area = choice.area
    selected = {"client_instance_id": client, "metric_name": metric}
    rollups = read_table(area, "rollups", columns=ROLLUP_CHART_COLUMNS, equal=selected)
    breaches = read_table(area, "anomalies", equal=selected)  # already this client's and this metric's
    thresholds = read_table(area, "thresholds", equal={"metric_name": metric})
    series = telemetry_view.metric_series(rollups, client, metric)
    levels = sorted({float(v) for v in breaches.get("threshold", pd.Series(dtype=float)).dropna()})[:3]
    if not levels and not thresholds.empty:
        static = thresholds[(thresholds["metric_name"] == metric) & (thresholds["kind"] == "static")]
        levels = sorted({float(v) for v in static["threshold"].dropna()})[:3]
    label = str(rollups["client_id"].iloc[0]) if not rollups.empty else client
    return plots.client_metric_png(series, metric, label, levels, breaches)


def _plain_error(status_code: int, text: str) -> PlainTextResponse:
    """Errors are text/plain: whatever the request put in them cannot become markup."""
    return PlainTextResponse(f"{status_code}: {text}", status_code=status_code, headers=TEXT_HEADERS)


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)  # FastAPI's, and the router's own 404/405
    async def login_redirect(request: Request, err: StarletteHTTPException) -> Response:
        if err.status_code == status.HTTP_401_UNAUTHORIZED and request.method == "GET":
            from airflow.api_fastapi.app import get_auth_manager

            return RedirectResponse(get_auth_manager().get_url_login(next_url=str(request.url)))
        return _plain_error(err.status_code, str(err.detail))

    @app.exception_handler(RequestValidationError)
    async def bad_parameter(request: Request, err: RequestValidationError) -> Response:
        names = sorted({".".join(str(p) for p in e.get("loc", ())[1:]) or "request" for e in err.errors()})
        return _plain_error(
            status.HTTP_422_UNPROCESSABLE_ENTITY, f"bad or missing parameter: {', '.join(names)}"
        )


def create_app() -> FastAPI:
    from airflow.api_fastapi.core_api.security import get_user

    app = FastAPI(
        title="KIP-714 client telemetry", dependencies=[Depends(get_user)], docs_url=None, redoc_url=None
    )
    _add_error_handlers(app)
    User = Depends(get_user)

    @app.get("/", response_class=HTMLResponse)
    def overview(
        run: str = SCHEDULED_KEY,
        client: str = Query("", max_length=200),
        group: str = Query("", max_length=200),
        library: str = Query("", max_length=200),
        principal: str = Query("", max_length=200),
        user: Any = User,
    ) -> HTMLResponse:
        filters = findings_view.Filters(client=client, group=group, library=library, principal=principal)
        return HTMLResponse(render_page(run, filters, user))

    @app.get("/charts/client.png")
    def client_png(
        client: str = Query(min_length=1),
        metric: str = Query(min_length=1),
        run: str = SCHEDULED_KEY,
        user: Any = User,
    ) -> Response:
        png = client_chart(_run_or_404(run, user), client, metric)
        return Response(png, media_type="image/png", headers=PNG_HEADERS)

    @app.get("/charts/brokers.png")
    def brokers_png(run: str = SCHEDULED_KEY, user: Any = User) -> Response:
        broker_metrics = read_table(_run_or_404(run, user).area, "broker_metrics")
        return Response(plots.broker_health_png(broker_metrics), media_type="image/png", headers=PNG_HEADERS)

    @app.get("/reports/{run_folder}/")
    def report_index(run_folder: str, user: Any = User) -> Response:
        _run_or_404(run_folder, user)
        return RedirectResponse("report.html")

    @app.get("/reports/{run_folder}/{file_name}")
    def report(run_folder: str, file_name: str, user: Any = User) -> Response:
        choice = _run_or_404(run_folder, user)
        path = report_files.report_file(choice.area, file_name)
        if path is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, "report: no such report file")
        if isinstance(path, Path):
            return FileResponse(path, media_type=report_files.media_type(path))
        return Response(path.read_bytes(), media_type=report_files.media_type(path))

    return app
