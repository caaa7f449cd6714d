"""What a run reports: ``output`` (the summary table, results.json, traces), and for the gate ``gate`` (the
judgement per case and check), ``known`` (known divergences), ``junit`` (JUnit XML), ``summary`` (summary.md)."""
