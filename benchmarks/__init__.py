"""Benchmarks for report-claims: synthetic corpora (generate) and a runner that prints ratios (python -m benchmarks)."""
