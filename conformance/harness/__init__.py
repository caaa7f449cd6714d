"""The harness: the processes one example runs through. ``suite`` (the selection and its loop), ``run_settings``
(what a run asks of every case, one object), ``case`` (one case under Hypothesis), ``profiles`` (its Hypothesis
profiles), ``drawing`` (its examples), ``preparing`` (its kernels compiled ahead), ``example`` (one example: model,
launch the ranks, compare), ``hangs`` (an example's timeout as the case's hang), ``rank_side`` (one example on each
rank process), ``replay_params`` (checking ``--params``)."""
