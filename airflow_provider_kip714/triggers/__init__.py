"""Airflow triggers of the KIP-714 provider."""
