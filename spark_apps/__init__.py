"""PySpark applications (plain ``spark-submit`` files) and their shared library ``kip714_common``.

Importable from the repository root as ``spark_apps`` for helpers such as ``spark_apps.package``; the apps
themselves import ``kip714_common`` as a top-level package (their own folder or the ``--py-files`` zip).
"""
