"""Triton device API: ``DeviceContext``."""

from iris.device.context import DeviceContext

__all__ = ["DeviceContext"]
