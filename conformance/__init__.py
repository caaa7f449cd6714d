"""Triton/Gluon tracing conformance: paired scenarios, a Python model, three-way comparison."""
