"""Airflow operators of the KIP-714 provider."""
