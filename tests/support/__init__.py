"""Test and benchmark support shared by several suites (synthetic landing data)."""
