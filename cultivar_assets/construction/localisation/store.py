"""Storing the localisation step's drafts (``raw.localised_drafts``, ``raw.localisation_runs``).

Views: ``localised_drafts`` (one row per locale and selected instance, with the codes of the
checks it fails, ``drafts.draft_checks``) and ``localisation_summary`` (one row per locale: the
run that wrote its drafts, the localiser as ``drafts.localiser_description`` gives it from the
engine, model and revision stored beside it, how many drafts fail each check, token usage and the
estimated cost). A locale's rows are replaced in one transaction.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from cultivar_assets.construction.localisation.drafts import (
    CHECKS,
    Draft,
    localiser_description,
    recorded_from,
)
from cultivar_assets.construction.localisation.localiser import LocalisationRun
from cultivar_assets.secrets import redact
from cultivar_assets.store.database import Store, WriteBlock

DRAFT_SCHEMA = pa.schema([
    ("locale", pa.string()), ("instance_id", pa.int32()), ("source_original", pa.string()),
    ("english_original", pa.string()), ("source_draft", pa.string()),
    ("english_draft", pa.string()), ("raw_answer", pa.string()), ("flagged", pa.bool_()),
    ("flag_reason", pa.string()), ("attempts", pa.int32()), ("prompt_hash", pa.string()),
    ("draft_hash", pa.string()), ("prompt_tokens", pa.int64()),
    ("completion_tokens", pa.int64()), ("checks", pa.list_(pa.string())),
])


def run_rows(run: LocalisationRun, selection_fingerprint: str, is_demo: bool
             ) -> list[dict[str, Any]]:
    """The ``raw.localisation_runs`` rows of ``run``, one per locale."""
    localiser, config = run.localiser, run.localiser.config
    prices = localiser.prices
    now = datetime.now(UTC).replace(tzinfo=None)
    rows = []
    revision = run.info.model_revision or config.revision
    recording = recorded_from(localiser.spec.engine, localiser.spec.engine_options)
    for locale, drafts in run.locales.items():
        totals = drafts.totals()
        checks = [code for d in drafts.drafts for code in d.draft.checks]
        rows.append({
            "locale": locale, "task_id": drafts.task_id, "drafts_hash": drafts.drafts_hash,
            **{k: totals[k] for k in ("n_drafts", "n_flagged", "n_retried", "n_unchanged",
                                       "n_generated", "prompt_tokens", "completion_tokens",
                                       "estimated_cost", "estimated_cost_this_run")},
            "price_input_per_million": prices.input_per_million if prices else None,
            "price_output_per_million": prices.output_per_million if prices else None,
            "currency": prices.currency if prices else None,
            **{f"n_{code}": checks.count(code) for code in CHECKS},
            "localiser": localiser_description(localiser.spec.engine, config.model, revision,
                                               recording),
            "recorded_from": json.dumps(recording, sort_keys=True) if recording else None,
            "engine": localiser.spec.engine,
            "engine_version": run.info.engine_version, "model": config.model,
            "model_revision": revision,
            "engine_fingerprint": localiser.fingerprint,
            "engine_options": redact(json.dumps(localiser.recorded_options(), sort_keys=True)),
            "prompt_name": localiser.prompt.name, "prompt_hash": localiser.prompt.prompt_hash,
            "max_new_tokens": config.max_new_tokens, "max_attempts": config.max_attempts,
            "selection_fingerprint": selection_fingerprint, "is_demo": is_demo,
            "seconds": run.seconds, "n_locales_in_run": len(run.locales), "created_at": now,
        })
    return rows


def draft_rows(run: LocalisationRun, locale: str) -> pa.Table:
    rows = [{**{k: v for k, v in d.draft.as_dict().items() if k != "draft_hash"},
             "draft_hash": d.draft.draft_hash, "attempts": d.attempts,
             "prompt_tokens": d.prompt_tokens, "completion_tokens": d.completion_tokens}
            for d in run.locales[locale].drafts]
    return pa.Table.from_pylist(rows, schema=DRAFT_SCHEMA)


def write_localisation(store: Store, run: LocalisationRun, selection_fingerprint: str,
                       is_demo: bool) -> None:
    """Replace the drafts of every locale of ``run`` (one transaction)."""
    blocks = []
    runs = {row["locale"]: row for row in run_rows(run, selection_fingerprint, is_demo)}
    for locale in run.locales:
        blocks += [WriteBlock("delete_locale_drafts", {"locale": locale}),
                  WriteBlock("insert_localisation_run", rows=[runs[locale]]),
                  WriteBlock("insert_localised_drafts", rows=draft_rows(run, locale))]
    store.write(blocks)


def read_drafts(store: Store, locale: str) -> list[Draft]:
    """The stored drafts of ``locale`` (a LookupError naming the step when there are none)."""
    rows = store.query("locale_drafts", locale=locale)
    if not rows:
        raise LookupError(f"{store.path} holds no drafts for {locale}; materialise "
                          f"localised_drafts for it first (cultivar build localise)")
    fields = ("locale", "instance_id", "source_original", "english_original", "source_draft",
              "english_draft", "raw_answer", "flagged", "flag_reason", "prompt_hash")
    drafts = [Draft(**{k: row[k] for k in fields}) for row in rows]
    for draft, row in zip(drafts, rows, strict=True):
        if draft.draft_hash != row["draft_hash"]:
            raise ValueError(f"{store.path}: the stored draft {locale}_{draft.instance_id} does "
                             "not match its hash; localise the locale again")
    return drafts


def read_localisation_run(store: Store, locale: str) -> dict[str, Any] | None:
    rows = store.query("localisation_run", locale=locale)
    return rows[0] if rows else None
