"""Launching the Spark apps from Airflow."""
