"""The troubleshooting DAG's domain: the Param form, the request, the window's rules."""
