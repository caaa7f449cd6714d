"""Experimental iris features: the Gluon device API (``iris_gluon``) and its tracing (``tracing``).

Importing this package patches nothing. On CPU worlds (``TRITON_INTERPRET=1``) Gluon kernels run through the
layout-erasing interpreter shim, installed where worlds start: :func:`iris.world.install_interpreter`.
"""
