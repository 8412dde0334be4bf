"""The leaderboard's CSV and JSON downloads written by a child process:
``python -m cultivar_assets.site.table_worker``.

At 1,000 models ``downloads/leaderboard.csv`` is 15 MB (each row lists the models it cannot be
separated from), and writing it and the JSON took a second of the builder's Python; this
process writes them on another core while the builder renders pages. Its stdin: a JSON line
``{"csv": path, "json": path}`` followed by the table as an Arrow IPC stream; the files are
written with :func:`cultivar_assets.tables.csv_text` and :func:`~cultivar_assets.tables.
json_text`, exactly as the builder would.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc

from cultivar_assets.site.child_job import ChildJob
from cultivar_assets.tables import csv_text, json_text


class TableTextJob:
    """:meth:`submit` a table and the paths of its CSV and JSON; :meth:`result` waits for the
    files and returns their paths."""

    def __init__(self, start: bool = True) -> None:
        self.paths: list[Path] = []
        self.job = ChildJob("cultivar_assets.site.table_worker", "writing the leaderboard's "
                            "CSV and JSON", start)

    def submit(self, table: pa.Table, csv_path: Path, json_path: Path) -> None:
        self.paths = [Path(csv_path), Path(json_path)]
        sink = pa.BufferOutputStream()
        with pyarrow.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        head = json.dumps({"csv": str(csv_path), "json": str(json_path)}).encode("utf-8")
        self.job.submit(head + b"\n" + sink.getvalue().to_pybytes())

    def result(self) -> list[Path]:
        if self.job.result() is None:
            return []
        return self.paths

    def cancel(self) -> None:
        self.job.cancel()


def write_texts(table: pa.Table, csv_path: Path, json_path: Path) -> None:
    """``table`` as CSV and JSON text files (UTF-8)."""
    rows = table.to_pylist()
    Path(csv_path).write_text(csv_text(rows, table.column_names), "utf-8", newline="")
    Path(json_path).write_text(json_text(rows, table.column_names), "utf-8")


def main() -> int:
    stream = sys.stdin.buffer
    paths = json.loads(stream.readline())
    table = pyarrow.ipc.open_stream(stream).read_all()
    write_texts(table, Path(paths["csv"]), Path(paths["json"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
