"""Window names: one format, parsed back exactly; the reaper relies on nothing else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from airflow_provider_kip714.clock import FixedClock, ManualClock, SystemClock
from airflow_provider_kip714.exceptions import InvalidWindowNameError, SubscriptionValidationError
from airflow_provider_kip714.subscriptions.duration import parse_duration, parse_window_length
from airflow_provider_kip714.subscriptions.limits import (
    CLOCK_SKEW_TOLERANCE,
    FURTHEST_EXPIRY,
    MAX_WINDOW,
    expiry_problem,
)
from airflow_provider_kip714.subscriptions.window_name import (
    derive_suffix,
    format_window_name,
    is_window_name,
    parse_window_name,
    random_suffix,
    slugify_label,
)


def test_format_then_parse_round_trips_and_truncates_to_seconds() -> None:
    expiry = datetime(2026, 1, 2, 3, 4, 5, 999_000, tzinfo=UTC)
    name = format_window_name("orders-team", expiry, "deadbeef")
    assert name == "kip714-orders-team-exp20260102T030405Z-deadbeef"
    parsed = parse_window_name(name)
    assert parsed.label == "orders-team"
    assert parsed.suffix == "deadbeef"
    assert parsed.expires_at == expiry.replace(microsecond=0)
    assert str(parsed) == name


def test_non_utc_expiry_is_converted_to_utc() -> None:
    plus_two = timezone(timedelta(hours=2))
    name = format_window_name("x", datetime(2026, 1, 2, 5, 0, tzinfo=plus_two), "00000000")
    assert "exp20260102T030000Z" in name


@pytest.mark.parametrize(
    "name",
    [
        "kip714-x-exp20260102T030405Z-deadbee",  # 7 hex
        "kip714-x-exp20260102T030405Z-DEADBEEF",  # upper case
        "kip714--exp20260102T030405Z-deadbeef",  # empty label
        "kip714-x-exp2026010T030405Z-deadbeef",  # short date
        "kip714-x-exp20261302T030405Z-deadbeef",  # month 13
        "kip714-X-exp20260102T030405Z-deadbeef",  # upper label
        "other-x-exp20260102T030405Z-deadbeef",
        "kip714-x-exp20260102T030405Z-deadbeef-extra",
        "my-subscription",
    ],
)
def test_names_outside_the_pattern_are_rejected(name: str) -> None:
    assert not is_window_name(name)
    with pytest.raises(InvalidWindowNameError):
        parse_window_name(name)


def test_labels_with_hyphens_parse_back() -> None:
    name = format_window_name("a-b-c-exp", datetime(2026, 1, 1, tzinfo=UTC), "12345678")
    assert parse_window_name(name).label == "a-b-c-exp"


def test_bad_parts_are_refused_when_formatting() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    with pytest.raises(InvalidWindowNameError, match="label"):
        format_window_name("Bad Label", now, "12345678")
    with pytest.raises(InvalidWindowNameError, match="suffix"):
        format_window_name("ok", now, "xyz")
    with pytest.raises(InvalidWindowNameError, match="aware"):
        format_window_name("ok", datetime(2026, 1, 1), "12345678")


def test_derived_suffix_is_deterministic_and_sensitive() -> None:
    one = derive_suffix("dag", "task", "run-1", -1, 1800)
    assert one == derive_suffix("dag", "task", "run-1", -1, 1800)
    assert one != derive_suffix("dag", "task", "run-2", -1, 1800)
    assert len(one) == 8 and int(one, 16) >= 0
    assert random_suffix() != random_suffix()


def test_slugify_label() -> None:
    assert slugify_label("Orders Team / EU_1") == "orders-team-eu-1"
    assert slugify_label("***") == "window"
    assert len(slugify_label("a" * 200)) == 60


def test_expiry_is_inclusive() -> None:
    window = parse_window_name("kip714-x-exp20260102T030405Z-deadbeef")
    assert not window.is_expired(window.expires_at - timedelta(seconds=1))
    assert window.is_expired(window.expires_at)


def test_clocks() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    manual = ManualClock(start)
    assert manual.advance(timedelta(minutes=5)) == start + timedelta(minutes=5)
    fixed = FixedClock(start)
    with pytest.raises(TypeError):
        fixed.advance(timedelta(seconds=1))
    with pytest.raises(ValueError, match="aware"):
        ManualClock(datetime(2026, 1, 1))
    assert SystemClock().now().tzinfo is not None


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30m", 1800), ("1h30m", 5400), ("20s", 20), ("2d", 172800), ("90", 90), ("500ms", 0.5)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text).total_seconds() == seconds


@pytest.mark.parametrize("text", ["", "0s", "30x", "m30", "1h 30m", "-5m", "1h1h", "30m1h", "1s500ms1s"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(SubscriptionValidationError, match="window"):
        parse_duration(text)


@pytest.mark.parametrize(
    "value",
    [
        "99999999999999",  # OverflowError from timedelta before
        "²",  # isdigit() but not int(): ValueError before
        "9999999d",  # OverflowError before
        "٣m",  # a non-ASCII digit the regex's \d accepted
        "1" * 40,
        "nan",
        "inf",
        float("nan"),
        float("inf"),
        float("-inf"),
        1e300,
        -1,
        10**30,
        "3650d",
        "24h1s",
        "86401",
        "1ms",  # shorter than the second its name's expiry is written to: expired when created
        "999ms",
        0.5,
    ],
)
def test_window_lengths_out_of_range_or_malformed_are_one_validation_error(value: object) -> None:
    with pytest.raises(SubscriptionValidationError) as raised:
        parse_window_length(value)  # type: ignore[arg-type]
    assert raised.value.field == "window"


def test_the_maximum_window_is_accepted_and_one_second_more_is_not() -> None:
    assert parse_window_length("24h") == MAX_WINDOW == parse_window_length(86400)
    with pytest.raises(SubscriptionValidationError, match="at most 24h"):
        parse_window_length(timedelta(hours=24, seconds=1))


@pytest.mark.parametrize("expiry", ["00010101T000000Z", "09991231T235959Z", "99991231T235959Z"])
def test_odd_expiries_keep_their_exact_name_and_are_reapable(expiry: str) -> None:
    """A year-0001 name was re-formatted as ``exp10101...`` on delete, so the reaper never removed it."""
    name = f"kip714-odd-exp{expiry}-0000abcd"
    window = parse_window_name(name)
    assert str(window) == name
    assert format_window_name("odd", window.expires_at, "0000abcd") == name
    assert window.is_reapable(datetime(2026, 6, 1, tzinfo=UTC))


def test_reapable_means_expired_or_further_than_the_maximum_window_plus_skew() -> None:
    now = datetime(2026, 6, 1, tzinfo=UTC)
    inside = parse_window_name(format_window_name("w", now + MAX_WINDOW + CLOCK_SKEW_TOLERANCE, "00000001"))
    beyond = parse_window_name(
        format_window_name("w", now + FURTHEST_EXPIRY + timedelta(seconds=1), "00000002")
    )
    assert not inside.is_reapable(now) and inside.is_reapable(inside.expires_at)
    assert beyond.is_reapable(now) and expiry_problem(beyond.expires_at, now) is not None
    assert expiry_problem(inside.expires_at, now) is None


def test_a_window_is_never_reaped_before_its_expiry_by_the_reapers_clock() -> None:
    """With every clock within CLOCK_SKEW_TOLERANCE of UTC, this bounds early deletion to that tolerance."""
    expiry = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    window = parse_window_name(format_window_name("w", expiry, "00000003"))
    for early in (CLOCK_SKEW_TOLERANCE, timedelta(seconds=1), timedelta(microseconds=1)):
        assert not window.is_reapable(expiry - early)
    assert window.is_reapable(expiry)
