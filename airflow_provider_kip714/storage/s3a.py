"""Spark's s3a settings from the same Airflow ``aws`` connection the provider uses for the data root.

Executors run on other hosts and never see Airflow's connections, so the launcher hands them the
connection's key, secret (and session token), endpoint and region as ``spark.hadoop.fs.s3a.*``
settings. ``spark-submit`` passes ``--conf`` values on its command line, which Airflow's
``SparkSubmitOperator`` masks in its logs only for keys it knows; prefer an instance profile or
``AWS_*`` variables on the Spark hosts in production (``docs/production.md``), where the connection
then carries no key and only the endpoint is passed.
"""

from __future__ import annotations

from urllib.parse import urlparse

S3A_CREDENTIALS_PROVIDER = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
S3A_SESSION_PROVIDER = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"


def s3a_conf(conn_id: str | None) -> dict[str, str]:
    """``spark.hadoop.fs.s3a.*`` for the aws connection ``conn_id`` (endpoint from its ``endpoint_url``)."""
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    hook = S3Hook(aws_conn_id=conn_id)
    conf: dict[str, str] = {}
    endpoint = hook.conn_config.get_service_endpoint_url(service_name="s3")
    if endpoint:
        conf["spark.hadoop.fs.s3a.endpoint"] = endpoint
        conf["spark.hadoop.fs.s3a.path.style.access"] = "true"
        conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(urlparse(endpoint).scheme == "https").lower()
        # S3-compatible servers often refuse DeleteObjects as the AWS SDK v2 sends it (a CRC checksum
        # instead of Content-MD5; S3Proxy answers NotImplemented): delete object by object there.
        conf["spark.hadoop.fs.s3a.multiobjectdelete.enable"] = "false"
    region = hook.conn_region_name
    if region:
        conf["spark.hadoop.fs.s3a.endpoint.region"] = region
    credentials = hook.get_credentials()
    if credentials.access_key and credentials.secret_key:
        conf["spark.hadoop.fs.s3a.access.key"] = credentials.access_key
        conf["spark.hadoop.fs.s3a.secret.key"] = credentials.secret_key
        conf["spark.hadoop.fs.s3a.aws.credentials.provider"] = S3A_CREDENTIALS_PROVIDER
        if credentials.token:
            conf["spark.hadoop.fs.s3a.session.token"] = credentials.token
            conf["spark.hadoop.fs.s3a.aws.credentials.provider"] = S3A_SESSION_PROVIDER
    return conf
