"""Benchmark data: locales, test sets, FLORES and Cultivar readers (no Dagster)."""
