"""``kip714_dev.signals.exit_on_sigterm``: a killed benchmark still runs its ``finally``."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = """
import sys, time
from kip714_dev.signals import exit_on_sigterm
exit_on_sigterm()
try:
    print("ready", flush=True)
    time.sleep(60)
finally:
    open(sys.argv[1], "w").write("stopped the broker")
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminated_script_unwinds_and_exits_with_the_shell_status(tmp_path: Path, signum: int) -> None:
    marker = tmp_path / "finally-ran"
    process = subprocess.Popen([sys.executable, "-c", SCRIPT, str(marker)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    started = time.monotonic()
    process.send_signal(signum)
    assert process.wait(timeout=30) == 128 + signum
    assert time.monotonic() - started < 30
    assert marker.read_text() == "stopped the broker"
