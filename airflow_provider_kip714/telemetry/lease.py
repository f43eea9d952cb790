"""One writer per landing zone, on a local folder or an object store, without locks or conditional writes.

``flock`` does not exist on object storage, and S3-compatible servers need not support conditional
PUTs (S3Proxy 2.6.0 ignores ``If-None-Match`` on PUT). The lease needs only what the commit protocol
already needs: a listing shows every object written before it (S3's strong consistency; a local
folder).

**Acquire.** List ``_lease/``; if a live claim is there, fail. Write my own claim under a unique name,
then list again. If my claim is the only live one, I hold the lease; otherwise I delete my claim and,
after a random pause, try again (and fail if the other claim is still live). Two contenders cannot
both win: the one that listed second saw the other's claim, written before its own listing.

**Live.** A claim is live until its ``expires_at``; the holder rewrites it every ``ttl/3``. A claim
from this host whose process is gone is dead at once, so a rerun after SIGKILL on the same machine
does not wait for the expiry; from another host it waits at most ``ttl``.

**Fencing.** The holder may commit only while ``check()`` passes: its claim was renewed less than
``ttl - margin`` ago and was still its own when renewed. A holder that stalls longer than that (a GC
pause, a lost network) stops committing before anyone else can take the zone, as long as clocks
differ by less than ``margin``. A taker deletes the dead claim, so a stalled holder that wakes up
finds its claim gone and stops.
"""

from __future__ import annotations

import json
import logging
import os
import random
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Final

from airflow_provider_kip714.exceptions import LandingError

log = logging.getLogger(__name__)

DEFAULT_TTL_S: Final = 60.0
ACQUIRE_ATTEMPTS: Final = 6
LEASE_POLL_S: Final = 1.0


def fresh(fs: Any) -> Any:
    """``fs`` with its listing cache dropped: the protocol needs every listing to show what any process
    wrote before it (S3 itself is strongly consistent). The data root's own filesystems keep no listings
    (``storage.data_root._never_reuse_listings``); this guards one made elsewhere, which s3fs would keep
    for the life of the process."""
    fs.invalidate_cache()
    return fs


@dataclass(frozen=True)
class Claim:
    name: str
    owner: str
    host: str
    pid: int
    pid_start: str
    expires_at: float

    def live(self, now: float) -> bool:
        if now >= self.expires_at:
            return False
        if self.host == socket.gethostname():
            return _process_start(self.pid) == self.pid_start
        return True

    def describe(self) -> str:
        until = time.strftime("%H:%M:%S", time.gmtime(self.expires_at))
        return f"pid {self.pid} on {self.host} (claim {self.name}, live until {until} UTC unless renewed)"


def _process_start(pid: int) -> str:
    """The process's start time in clock ticks since boot ('' when it is gone): tells PID reuse apart."""
    try:
        stat = open(f"/proc/{pid}/stat").read()  # noqa: SIM115
    except OSError:
        return ""
    return stat.rsplit(")", 1)[-1].split()[19]


class ZoneLease:
    """The lease of one zone's ``_lease/`` folder; use as a context manager around a landing run."""

    def __init__(self, fs: Any, directory: str, label: str, ttl_s: float | None = None) -> None:
        self.fs = fs
        self.directory = directory
        self.label = label
        self.ttl_s = float(ttl_s or os.environ.get("KIP714_LEASE_TTL_S") or DEFAULT_TTL_S)
        self.margin_s = self.ttl_s / 4
        self.owner = uuid.uuid4().hex
        self._claim_name: str | None = None
        self._valid_until = 0.0
        self._lost: str | None = None
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self.wait_s = 0.0

    # ---- public --------------------------------------------------------------------------------

    def __enter__(self) -> ZoneLease:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def waiting(self, seconds: float) -> ZoneLease:
        """Wait up to ``seconds`` for another run's live claim to end before failing (default: fail at
        once). Live mode and the hourly DAG land into one zone: each waits for the other's short run."""
        self.wait_s = max(0.0, float(seconds))
        return self

    def acquire(self) -> None:
        deadline = time.monotonic() + self.wait_s
        for attempt in range(ACQUIRE_ATTEMPTS):
            others = self._live_claims()
            while others and time.monotonic() < deadline:
                time.sleep(min(LEASE_POLL_S, max(0.0, deadline - time.monotonic())))
                others = self._live_claims()
            if others:
                raise LandingError(f"out_dir: another landing run holds {self.label}: {others[0].describe()}")
            name = f"{time.time_ns():020d}-{self.owner}.json"
            try:
                self._write(name)
            except OSError as err:  # a parent that is a file, a folder this user cannot create
                raise LandingError(
                    f"out_dir: cannot write {self.label}: {err.strerror or err} ({self.directory})"
                ) from None
            others = [claim for claim in self._live_claims() if claim.name != name]
            if not others:
                self._claim_name = name
                self._remove_dead_claims()
                self._renewer = threading.Thread(target=self._renew_loop, name="kip714-lease", daemon=True)
                self._renewer.start()
                return
            self.fs.rm_file(self._path(name))
            time.sleep(random.uniform(0.1, 0.5) * (attempt + 1))
        raise LandingError(f"out_dir: could not take the lease of {self.label} (contended); try again")

    def check(self) -> None:
        """Raise unless this run still holds the lease (called before every commit marker)."""
        if self._claim_name is None:
            raise LandingError(f"out_dir: writing {self.label} without holding its lease")
        if self._lost is not None:
            raise LandingError(f"out_dir: lost the lease of {self.label}: {self._lost}")
        if time.monotonic() >= self._valid_until:
            raise LandingError(
                f"out_dir: the lease of {self.label} was not renewed for {self.ttl_s - self.margin_s:.0f} s; "
                "stopping before another run may take it"
            )

    def release(self) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=30)
        if self._claim_name is not None and self._lost is None:
            path = self._path(self._claim_name)
            if fresh(self.fs).exists(path):
                self.fs.rm_file(path)
        self._claim_name = None

    # ---- internals -----------------------------------------------------------------------------

    def _path(self, name: str) -> str:
        return f"{self.directory}/{name}"

    def _write(self, name: str) -> None:
        started = time.monotonic()
        body = {
            "owner": self.owner,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "pid_start": _process_start(os.getpid()),
            "expires_at": time.time() + self.ttl_s,
        }
        if "file" in (self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)):
            self.fs.makedirs(self.directory, exist_ok=True)
        self.fs.pipe_file(self._path(name), json.dumps(body).encode())
        self._valid_until = started + self.ttl_s - self.margin_s

    def _claims(self) -> list[Claim]:
        if not fresh(self.fs).exists(self.directory):
            return []
        claims = []
        for path in sorted(fresh(self.fs).ls(self.directory, detail=False)):
            name = str(path).rsplit("/", 1)[-1]
            try:
                body = json.loads(self.fs.cat_file(path))
                claims.append(Claim(name=name, **body))
            except (FileNotFoundError, ValueError, TypeError):
                continue  # deleted meanwhile, or not a claim
        return claims

    def _live_claims(self) -> list[Claim]:
        now = time.time()
        return [claim for claim in self._claims() if claim.live(now)]

    def _remove_dead_claims(self) -> None:
        now = time.time()
        for claim in self._claims():
            if claim.name != self._claim_name and not claim.live(now):
                log.warning("landing zone %s: taking over from dead claim %s", self.label, claim.describe())
                self.fs.rm_file(self._path(claim.name))

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.ttl_s / 3):
            name = self._claim_name
            if name is None:
                return
            try:
                current = json.loads(self.fs.cat_file(self._path(name)))
            except FileNotFoundError:
                self._lost = "its claim was deleted (it had expired and another run took the zone)"
                return
            except Exception as err:  # a transient store error: keep trying until the lease runs out
                log.warning("lease of %s: renewal failed (%s); retrying", self.label, err)
                continue
            if current.get("owner") != self.owner:
                self._lost = "its claim was overwritten"
                return
            self._write(name)
