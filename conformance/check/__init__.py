"""The checks of one example: the model (what a scenario must produce), the three-way comparison (with the
normalization of observed events), and the reader of the exported trace file."""
