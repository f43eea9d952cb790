"""The column groups other modules take from ``landing_contract`` are the landing columns they name."""

from __future__ import annotations

from dataclasses import fields

from airflow_provider_kip714.analytics.convergence_live import IDENTITY_COLUMNS
from airflow_provider_kip714.decoding.labels import LABEL_COLUMNS, RecordLabels
from spark_apps.kip714_common.landing_contract import (
    BROKER_LABEL_COLUMNS,
    CLIENT_IDENTITY_COLUMNS,
    DATAPOINT_COLUMNS,
)

KINDS = dict(DATAPOINT_COLUMNS)


def test_label_columns_are_the_parsed_labels_fields_in_order() -> None:
    assert LABEL_COLUMNS == BROKER_LABEL_COLUMNS
    assert tuple(f.name for f in fields(RecordLabels)) == LABEL_COLUMNS


def test_client_identity_is_string_landing_columns_in_landing_order_key_first() -> None:
    landing_order = [name for name, _ in DATAPOINT_COLUMNS if name in CLIENT_IDENTITY_COLUMNS]
    assert list(CLIENT_IDENTITY_COLUMNS) == landing_order
    assert CLIENT_IDENTITY_COLUMNS[0] == "client_instance_id"
    assert {KINDS[name] for name in CLIENT_IDENTITY_COLUMNS} == {"string"}
    assert set(CLIENT_IDENTITY_COLUMNS) <= set(BROKER_LABEL_COLUMNS)


def test_live_convergence_describes_an_instance_with_the_identity_beside_its_key() -> None:
    assert CLIENT_IDENTITY_COLUMNS[1:] == IDENTITY_COLUMNS
