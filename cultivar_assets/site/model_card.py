"""How a model card states the stored run record: the engine with its version, the time of the
evaluation.

- :func:`engine_text`: the registry's engine name and the run's ``engine_version`` (an engine
  writes its library and version there, e.g. ``transformers 5.24.0``, or more: ``openai-python
  1.99.0; server model …``). The version alone where it starts with the engine's name (no
  "transformers transformers 5.24.0"), else ``engine (version)``.
- :func:`utc_time`: ``raw.model_runs.finished_at`` is stored in UTC without a zone
  (``store/records.py``); shown to the second with the zone named, ``2025-06-01 14:03:52 UTC``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from cultivar_assets.tables import MISSING


def engine_text(engine: str | None, version: str | None) -> str:
    """The engine and its version as the card shows them (module docstring)."""
    engine, version = (engine or "").strip(), (version or "").strip()
    if not version:
        return engine or MISSING
    if not engine or version == engine or version.startswith(f"{engine} "):
        return version
    return f"{engine} ({version})"


def utc_time(value: datetime | str | None) -> str:
    """A stored UTC time (a ``datetime``, naive meaning UTC, or its ISO text) to the second,
    with its zone; an en dash for none."""
    if value is None or value == "":
        return MISSING
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    if not isinstance(moment, datetime):
        raise TypeError(f"not a time: {value!r}")
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")
