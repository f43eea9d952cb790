"""``kip714 local-spark``: a Spark standalone master and workers, separate JVMs from the venv's pyspark."""
