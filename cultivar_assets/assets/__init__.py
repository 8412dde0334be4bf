"""Dagster assets: thin wrappers that call the core and record metadata."""
