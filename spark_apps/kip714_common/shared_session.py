"""A Spark Connect server session that successive runs share: live mode's cycles.

**Why.** A Spark Connect server gives each session its own class loader (artifact isolation), and
Spark's cache of compiled generated code is keyed by class loader. So a run in a new session compiles
again every class the previous run compiled (Janino on the server, then the JIT on the new classes),
even when the plans are the same; runs in one session reuse them (``docs/benchmarks.md``, session 27).

**What a run in a shared session does.** The session outlives each run, and so does the server's cache of
the session's analysed plans, keyed by the plan as the client sends it, ids included. A client numbers its
plans from 0, so a later run's read of a table would find the plan an earlier run analysed, with the file
listing of that time (the files a rewrite has since replaced: FAILED_READ_FILE, or rows missing). Each run
therefore numbers its plans from a random offset of its own (``fresh_plan_ids``): the cache still serves
the plans a run repeats (turning it off made a cycle dearer than a session of its own), never another
run's; with a pyspark whose plan counter it cannot reach, the run takes a session of its own. A run then
resets what an earlier one may have left in the session (``begin_run``): executions still running (a
cycle killed mid-run) and the small-input settings (``tune_for_input`` sets them per run). Frames a killed
run cached stay cached until memory pressure evicts them, as before: the cache manager is the server's,
not the session's (``caching.py``), and Spark's ``clearCache`` would drop every session's cached frames,
the hourly DAG's too. A run ends without releasing the session: a server refuses an id it has released.
The caller picks when to move to a new id (``live.cycle``: after a pause, and every hour).
"""

from __future__ import annotations

import json
import logging
import secrets
from typing import Final

from kip714_common.connect_session_id import is_session_id
from kip714_common.errors import SparkAppInputError
from kip714_common.session import SMALL_INPUT_CONF, remote_session
from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

FLAG: Final = "--connect-session"
SESSION_ID_PARAM: Final = "session_id"
"""The Spark Connect URL parameter naming the server session to use (``sc://host:port/;session_id=...``)."""
CLOSED_SESSION_ERROR: Final = "INVALID_HANDLE.SESSION_CLOSED"
DEFAULTS_KEY: Final = "kip714.sharedSession.defaults"
"""Session setting holding, as JSON, the ``SMALL_INPUT_CONF`` keys' values the session began with (the
server's): unsetting a key would fall back to Spark's built-in default instead (200 shuffle partitions)."""
PLAN_ID_SPACING: Final = 1 << 24
"""Plan ids one run may use before it could reach another run's; a cycle creates a few thousand."""


def parse_session_id(text: str | None) -> str | None:
    """``--connect-session``: a version-4 UUID in its canonical form (what Spark Connect accepts); empty or
    absent: None (a session of the run's own)."""
    if text is None or not text.strip():
        return None
    if not is_session_id(text):
        raise SparkAppInputError(FLAG, "must be a version-4 UUID in canonical form", text)
    return text


def session_url(url: str, session_id: str) -> str:
    """``url`` naming the server session ``session_id``, after the URL's own parameters (a token, a user)."""
    base, separator, parameters = url.partition("/;")
    own = parameters.split(";") if separator else []
    kept = [p for p in own if p and not p.startswith(f"{SESSION_ID_PARAM}=")]
    return f"{base.rstrip('/')}/;" + ";".join([*kept, f"{SESSION_ID_PARAM}={session_id}"])


def fresh_plan_ids() -> bool:
    """Number this process's Spark Connect plans from a random multiple of ``PLAN_ID_SPACING``, so no
    other run's cached plan matches one of them; False if this pyspark keeps no such counter and lock
    (then the run does not share a session)."""
    from pyspark.sql.connect.plan import LogicalPlan

    lock = getattr(LogicalPlan, "_lock", None)
    if not isinstance(getattr(LogicalPlan, "_nextPlanId", None), int) or lock is None:
        return False
    with lock:
        LogicalPlan._nextPlanId = secrets.randbelow(1 << 38) * PLAN_ID_SPACING  # below 2^62: a proto int64
    return True


def connect(url: str, session_id: str) -> SparkSession:
    """A client of the server session ``session_id`` whose plans no other run's cached plan matches, and
    which its ``stop()`` does not release; a session of its own (released at its end) if this pyspark
    cannot number its plans apart, or if the server has closed that session (it warns: the run compiles
    its classes afresh)."""
    if not fresh_plan_ids():
        log.warning("this pyspark's plans cannot be numbered apart from other runs': no shared session")
        return remote_session(url)
    spark = remote_session(session_url(url, session_id))  # a dead server fails within half a minute
    spark.release_session_on_close = False  # type: ignore[attr-defined]
    try:
        spark.version  # noqa: B018 - the first round trip: a closed session id fails here
    except Exception as err:  # pyspark raises its gRPC errors under several classes
        if _condition(err) != CLOSED_SESSION_ERROR:
            raise
        log.warning("Spark Connect session %s was closed by the server: this run uses a new one", session_id)
        spark.stop()  # not released (it is closed already); the process's default session is cleared
        return remote_session(url)
    return spark


def _condition(err: Exception) -> str | None:
    """The error condition of a pyspark error (``INVALID_HANDLE.SESSION_CLOSED``), None for other errors."""
    condition = getattr(err, "getCondition", None)
    return condition() if callable(condition) else None


def begin_run(spark: SparkSession) -> None:
    """Reset what an earlier run may have left in the shared session: its executions still running, and the
    settings ``tune_for_input`` changes (back to the values the session began with)."""
    spark.interruptAll()
    saved = spark.conf.get(DEFAULTS_KEY, None)
    if saved is None:  # the session's first run: what it has now is the server's
        spark.conf.set(DEFAULTS_KEY, json.dumps({key: spark.conf.get(key, None) for key in SMALL_INPUT_CONF}))
        return
    for key, value in json.loads(saved).items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)
