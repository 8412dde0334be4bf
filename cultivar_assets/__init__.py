"""Cultivar toolkit: a pure core (data, engines, metrics, store) and thin Dagster assets."""

__version__ = "0.1.0"
