"""Upstream iris's ``iris.host`` import paths, as aliases: nothing is defined under this package.

``iris.host.tracing`` (``Tracing``, ``TraceEvent``, ``EVENT_NAMES``) and ``iris.host.tracing.events``
(``TraceEvent``, ``EVENT_NAMES``) name the objects of ``iris.tracing``.
"""
