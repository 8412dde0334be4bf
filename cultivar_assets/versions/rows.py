"""Data versions of what an asset wrote: the rows it wrote to the database, read back with a
named block of ``sql/data_versions.sql`` (each row as JSON, without the columns that say when or
how long), or the files it wrote below a folder (relative path and bytes). A rerun that writes
the same content gives the same digest, so nothing below it becomes stale in Dagster's eyes.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from cultivar_assets.store.database import Store
from cultivar_assets.versions.inputs import MISSING, content_digest

WRITTEN_ROWS = {
    "leaderboard": "leaderboard_written_rows",
    "reported_results": "reported_results_written_rows",
    "error_analysis": "error_analysis_written_rows",
}


def rows_digest(store: Store, asset: str) -> str:
    """sha256 over the rows that ``asset`` wrote (its block in ``sql/data_versions.sql``)."""
    digest = hashlib.sha256()
    for row in store.query(WRITTEN_ROWS[asset]):
        digest.update(f"{row['source']}\0{row['row']}\n".encode())
    return digest.hexdigest()


def folder_digest(folder: str | Path) -> str:
    """sha256 over the files below ``folder`` (relative path and bytes); a folder that is not
    there is an error (the asset that wrote it just returned)."""
    digest = content_digest(folder)
    if digest == MISSING:
        raise FileNotFoundError(f"{folder}: the folder the asset wrote is not there")
    return digest
