"""Airflow hooks of the KIP-714 provider."""
