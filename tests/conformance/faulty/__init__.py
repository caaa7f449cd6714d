"""Test-only scenario modules, wrong on purpose, selected explicitly by dotted path (never discovered).

Each one breaks one rule (kernels that do not pair, a model that raises, a buffer allocated twice, a kernel that
cannot be compiled in one API, a result that diverges, a rank that hangs or dies, a strategy that rejects every draw
or raises), so the tests can show that its own case fails with a message naming the module and the problem, and that
the run goes on. ``healthy`` is the unbroken control, ``even_ranks`` the control with a world-size constraint (it
refuses odd worlds), and ``old_paths`` a correct scenario written against the kit's old import paths.

The root ``conftest.py`` registers this package as a scenario package (``IRIS_SCENARIO_PACKAGES``): its modules are
scenarios only where it is listed.
"""
