"""Experimental iris features: the Gluon device API (``iris_gluon``) and its tracing (``tracing``).

Under ``TRITON_INTERPRET=1`` importing this package installs the layout-erasing Gluon interpreter
shim, so Gluon kernels run on CPU worlds exactly like Triton ones.
"""

from iris.experimental import gluon_interpret

gluon_interpret.install()
