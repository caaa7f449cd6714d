"""Paired scenarios, one module each (``SCENARIO = Scenario(...)``); discovered automatically."""
