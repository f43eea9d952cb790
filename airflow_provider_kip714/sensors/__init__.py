"""Airflow sensors of the KIP-714 provider."""
