"""The scenario kit: what a scenario module of ``conformance/scenarios/`` builds on (the ``Scenario`` contract
and registry, Hypothesis strategies, helpers for expected events, the call-shape family) and the scaffold of
``python -m conformance new``."""
