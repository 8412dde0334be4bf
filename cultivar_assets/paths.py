"""Where the project keeps its files.

``CULTIVAR_HOME`` (default: ``.cultivar`` in the current directory) holds the DuckDB databases,
the translation cache, converted model weights and the local Dagster instance used by
``cultivar demo``. The SQL files and site templates ship with the package (``sql/`` and ``site/``
in a source checkout).
"""

from __future__ import annotations

import hashlib
import os
from importlib import resources
from pathlib import Path

_PACKAGE_ROOT = Path(__file__).resolve().parent


def cultivar_home() -> Path:
    return Path(os.environ.get("CULTIVAR_HOME", ".cultivar")).expanduser().resolve()


def models_dir() -> Path:
    return cultivar_home() / "models"


def translation_cache_dir() -> Path:
    return cultivar_home() / "cache" / "translations"


def replicates_cache_dir(database: Path) -> Path:
    """Where the leaderboard keeps each model's bootstrap replicates for the database file
    ``database`` (a cache: each file is reused only under the key it was written with,
    :mod:`cultivar_assets.evaluation.aggregates`): one folder per database path."""
    digest = hashlib.sha256(str(Path(database).resolve()).encode()).hexdigest()[:16]
    return cultivar_home() / "cache" / "replicates" / digest


def default_database(source_name: str) -> Path:
    """One database per data source, so demo scores never meet real ones."""
    return cultivar_home() / "db" / f"{source_name}.duckdb"


def dagster_home() -> Path:
    return cultivar_home() / "dagster"


def resource_dir(name: str) -> Path:
    """``sql`` or ``site``: inside an installed wheel, else at the top of the source checkout."""
    packaged = Path(str(resources.files("cultivar_assets").joinpath("_resources", name)))
    if packaged.is_dir():
        return packaged
    checkout = _PACKAGE_ROOT.parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"cannot find the {name}/ folder (looked in {packaged}, {checkout})")
