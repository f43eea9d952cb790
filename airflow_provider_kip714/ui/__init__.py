"""The Airflow UI's "Client telemetry" page: a FastAPI app mounted by an Airflow plugin."""
