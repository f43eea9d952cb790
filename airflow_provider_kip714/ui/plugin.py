"""Airflow plugin (entry point ``airflow.plugins``): mounts the page and links it from the UI's menu.

The page is a FastAPI app under ``/kip714``; the external view puts "Client telemetry" in the
Browse menu and shows the page inside the UI at ``/plugin/kip714``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from airflow.plugins_manager import AirflowPlugin

PLUGIN_NAME = "kip714"
VIEW_NAME = "Client telemetry"
URL_PREFIX = "/kip714"
URL_ROUTE = "kip714"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class LazyPageApp:
    """An ASGI app that builds the real one on first request.

    Every Airflow component loads plugins (scheduler, task runners); only the API server serves
    the page, so only it should pay for importing pandas, pyarrow and matplotlib.
    """

    def __init__(self) -> None:
        self._app: Callable[[Scope, Receive, Send], Awaitable[None]] | None = None

    def __repr__(self) -> str:
        return "airflow_provider_kip714.ui.app:create_app()"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:
            from airflow_provider_kip714.ui.app import create_app

            self._app = create_app()
        await self._app(scope, receive, send)


class Kip714UiPlugin(AirflowPlugin):
    """KIP-714 client telemetry: subscriptions, anomalies, client charts, broker health, reports."""

    name = PLUGIN_NAME
    fastapi_apps = [{"app": LazyPageApp(), "url_prefix": URL_PREFIX, "name": "KIP-714 client telemetry"}]
    external_views = [
        {
            "name": VIEW_NAME,
            "href": f"{URL_PREFIX}/",
            "url_route": URL_ROUTE,
            "destination": "nav",
            "category": "browse",
        }
    ]
