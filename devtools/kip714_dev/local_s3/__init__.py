"""``kip714 local-s3``: a real S3 server (S3Proxy over its filesystem backend) on 127.0.0.1."""
