"""Findings: episodes of something wrong, detected live and sent to people (``model.py``)."""
