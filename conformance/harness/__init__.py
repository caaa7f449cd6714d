"""The harness: the processes one example runs through. ``suite`` (the selection and its loop), ``host_side`` (one
case and its examples on the host: the Hypothesis profiles, draw, launch, model, compare), ``rank_side`` (one
example on each rank process), ``replay_params`` (checking ``--params``)."""
