"""The compatibility matrix's CI subset (``make compat`` runs all of it): the oldest and the newest
broker, the oldest librdkafka with KIP-714 (2.5, from its own throwaway confluent-kafka venv)."""

from __future__ import annotations

import pytest
from kip714_dev.compat.clients import ClientSpec
from kip714_dev.compat.matrix import run_matrix
from kip714_dev.compat.table import render
from kip714_dev.compat.versions import QUICK_BROKERS, QUICK_CONFLUENT_KAFKA

pytestmark = [pytest.mark.compat, pytest.mark.slow]


def test_oldest_and_newest_broker_land_librdkafka_2_5() -> None:
    specs = [ClientSpec("librdkafka", version) for version in QUICK_CONFLUENT_KAFKA]
    runs = run_matrix(QUICK_BROKERS, specs, seconds=6, parallel=1)
    table = render(runs, specs)
    assert [run.version for run in runs] == ["3.7.2", "4.4.0"], table
    for run in runs:
        assert not run.error, table
        (outcome,) = run.clients.values()
        assert outcome.ok and outcome.detail.startswith("librdkafka 2.5."), table
        landed = run.landed[specs[0]]
        assert landed.pushes >= 4, table
        assert any(name.startswith("org.apache.kafka.producer.") for name in landed.metrics), table
        assert run.quarantined == 0 and run.records >= landed.pushes, table
    # 3.7 gives the plugin no source port; later versions do
    assert runs[0].landed[specs[0]].source_ports == {""}, table
    assert "" not in runs[1].landed[specs[0]].source_ports, table
    # a push too large only once decompressed: 3.7 has no such cap; 4.4 refuses it (measured: INVALID_RECORD)
    oldest, newest = runs[0].too_large, runs[1].too_large
    assert oldest is not None and newest is not None, table
    assert (oldest.compressed, oldest.uncompressed) == ("NONE", "TELEMETRY_TOO_LARGE"), table
    assert newest.compressed in ("INVALID_RECORD", "TELEMETRY_TOO_LARGE"), table
    assert newest.uncompressed == "TELEMETRY_TOO_LARGE", table
