"""Models whose latest run failed, as the site shows them (rows of ``site_failed_models``).

"Latest run failed" is the view ``failed_models``: the model's newest recorded failure (the
run-failure sensor's ``raw.run_failures``) is newer than its last finished run
(``raw.model_runs.finished_at``). Such a model is shown as failed, with the failed step, the
first line of the error, the time and the run id, never as missing.

Our choice for a model that still has scores on the leaderboard (from an earlier, finished run):
they stay on the leaderboard, marked as from that earlier run, with the finish time of that run
where it is stored, and the row says that the latest run failed. They are not hidden (they are
what was measured) and not presented as current. A failed model without scores gets a row of
its own, without values.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any


def _time(value: Any) -> str | None:
    """A stored UTC timestamp as the page writes it."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return f"{value:%Y-%m-%d %H:%M:%S} UTC"
    return f"{value} UTC"


def failure_rows(rows: list[dict[str, Any]], on_board: set[str]) -> list[dict[str, Any]]:
    """Each failed model (rows of ``site_failed_models``) with what the page says of it:
    ``on_board`` (it has scores from an earlier run on the leaderboard), ``failed_at_text``,
    ``last_success_text`` and ``summary`` (one line: step, error, time, run id)."""
    out = []
    for row in rows:
        failed_at = _time(row["failed_at"])
        step = f" in step {row['step']}" if row.get("step") else " (no failed step recorded)"
        summary = f"latest run failed{step}: {row['error']} ({failed_at}, run {row['run_id']})"
        out.append({**row, "on_board": row["model_id"] in on_board, "failed_at_text": failed_at,
                    "last_success_text": _time(row.get("last_success_at")),
                    "summary": summary})
    return out
