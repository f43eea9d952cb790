"""Live mode: land what is new every cycle, analyse the trailing minutes, announce findings (``cycle.py``)."""
