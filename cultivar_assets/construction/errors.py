"""The error of the construction steps' inputs."""

from __future__ import annotations


class ConstructionError(ValueError):
    """Bad input to a construction step; the message names the file and the item."""
