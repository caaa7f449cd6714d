"""The mutation self-test (``python -m conformance mutate``): ``catalogue`` (the mutants), ``runner`` (copies,
applies and judges each one), ``probe`` (the child process that runs cases on a mutated copy), ``report``
(outcomes, table, JSON)."""
