"""Token counts and cost across sessions, each model response counted once: the report
(report.py), huddle's own model calls beside it (own.py), the index that keeps what was
counted between runs (index.py) and the report's sums kept beside it (sums.py)."""
