"""Regenerate the findings-first screenshots in ``docs/images/``: report and page, 3 and 500 clients.

    .venv/bin/python -m tests.support.findings_screenshots [--out docs/images]

The report at 3 clients is the demo's window (``ui_demo_data``: the slow consumer of group ``audit``,
two silent producers); at 500 it is ``bench/bench_report.py``'s fleet. Each report is opened from its
folder (``file://``) in Debian's headless Chromium. The page is the UI's FastAPI app served by uvicorn on
127.0.0.1 (a fixed user stands in for Airflow's login; ``tests/ui/test_ui_browser.py`` covers the real
login) over the same tables. The top of each page is captured, scaled and reduced to 128 colours.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "docs" / "images"
WIDTH_PX = 1000
VIEW = (1300, 1500)
PORT = 41517


def _shoot(driver: Any, url: str, out: Path) -> None:
    from PIL import Image

    driver.get(url)
    time.sleep(2)  # the charts draw on load
    shot = Image.open(io.BytesIO(driver.get_screenshot_as_png())).convert("RGB")
    scaled = shot.resize((WIDTH_PX, round(shot.height * WIDTH_PX / shot.width)), Image.Resampling.LANCZOS)
    scaled.quantize(colors=128).save(out, optimize=True)
    print(f"wrote {out} ({out.stat().st_size} bytes)")


def _serve_page(data_dir: Path, port: int) -> Any:
    """The page's app on 127.0.0.1:``port`` in a thread, with a fixed admin user; returns the server."""
    import uvicorn
    from airflow.api_fastapi import app as airflow_app
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from airflow.api_fastapi.core_api.security import get_user

    from airflow_provider_kip714.ui.app import create_app

    os.environ["KIP714_DATA_DIR"] = str(data_dir)
    os.environ["KIP714_UI_KAFKA_CONN_ID"] = "kip714_screenshot_no_conn"
    airflow_app.create_auth_manager()
    app = create_app()
    app.dependency_overrides[get_user] = lambda: SimpleAuthManagerUser(username="screenshot", role="admin")
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.1)
    return server


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    out = parser.parse_args().out
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_report import BUCKETS, END, write_fleet

    from airflow_provider_kip714.clock import TimeSpan
    from airflow_provider_kip714.report import build_report
    from airflow_provider_kip714.storage.data_root import scheduled_area
    from tests.support.ui_demo_data import land_demo_analytics
    from tests.ui.chromium import start_chromium

    with tempfile.TemporaryDirectory(prefix="kip714-shots-") as tmp:
        small, large = Path(tmp) / "small", Path(tmp) / "large"
        land_demo_analytics(scheduled_area(small).analytics, END)
        write_fleet(scheduled_area(large).analytics, 500)
        span = TimeSpan(END - timedelta(minutes=BUCKETS), END)
        reports = {
            "report-3.png": build_report(scheduled_area(small), dag_id="kip714_troubleshoot", span=span),
            "report-500.png": build_report(scheduled_area(large), dag_id="kip714_troubleshoot", span=span),
        }
        driver = start_chromium(Path(tmp) / "chromium")
        driver.set_window_size(*VIEW)
        try:
            for name, result in reports.items():
                _shoot(driver, Path(result.html_path).as_uri(), out / name)
            for number, (name, data_dir) in enumerate((("page-3.png", small), ("page-500.png", large))):
                server = _serve_page(data_dir, PORT + number)
                try:
                    _shoot(driver, f"http://127.0.0.1:{PORT + number}/", out / name)
                finally:
                    server.should_exit = True
                    time.sleep(1)
        finally:
            driver.quit()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
