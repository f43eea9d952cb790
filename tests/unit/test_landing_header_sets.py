"""``HeaderSets.slots_by_value`` (landing's bulk interning) gives exactly the slots ``slot`` gives."""

from __future__ import annotations

from airflow_provider_kip714.decoding.header_sets import HeaderSets


def _fresh(headers: list[tuple[str, bytes | None]] | None) -> list[tuple[str, bytes | None]] | None:
    """A new list of new tuples with equal contents, as each ``Message.headers()`` call returns."""
    if headers is None:
        return None
    return [(bytes(name, "utf-8").decode(), None if raw is None else bytes(raw)) for name, raw in headers]


CLIENT = [("kip714.type", b"client"), ("kip714.client.id", b"orders-1")]
OTHER = [("kip714.type", b"client"), ("kip714.client.id", b"orders-2")]
NULL_VALUE = [("kip714.type", None)]


def test_bulk_slots_match_one_by_one_slots_in_the_same_order() -> None:
    stream = [CLIENT, OTHER, CLIENT, NULL_VALUE, OTHER, CLIENT]
    one_by_one, bulk = HeaderSets(), HeaderSets()
    expected = [one_by_one.slot(_fresh(headers)) for headers in stream]

    assert bulk.slots_by_value([_fresh(headers) for headers in stream[:3]]) == expected[:3]
    assert bulk.slots_by_value([_fresh(headers) for headers in stream[3:]]) == expected[3:]
    assert bulk.sets == one_by_one.sets == [tuple(CLIENT), tuple(OTHER), tuple(NULL_VALUE)]


def test_no_headers_and_empty_headers_are_one_set_kept_as_none() -> None:
    stream: list[list[tuple[str, bytes | None]] | None] = [CLIENT, [], CLIENT, [], OTHER]
    one_by_one, bulk = HeaderSets(), HeaderSets()
    expected = [one_by_one.slot(_fresh(headers)) for headers in stream]

    assert bulk.slots_by_value([_fresh(headers) for headers in stream]) == expected == [0, 1, 0, 1, 2]
    assert bulk.slots_by_value([None, _fresh(OTHER), []]) == [1, 2, 1]  # None: the one-by-one path
    assert bulk.sets == one_by_one.sets == [tuple(CLIENT), None, tuple(OTHER)]
