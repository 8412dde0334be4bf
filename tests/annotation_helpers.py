"""Drafts for the post-editing tests, made from the bundled demo data (written for the toolkit).

The demo's localised pair of an instance stands in for the LLM paraphrase; ``hostile`` and
``flagged`` variants add a draft with hostile text and one whose answer could not be parsed.
"""

from __future__ import annotations

import json
from dataclasses import replace

from cultivar_assets.construction.localisation.drafts import Draft
from cultivar_assets.data.sources import demo_dataset_dir

PROMPT_HASH = "0" * 63 + "1"
HOSTILE = ['<script>alert(1)</script>', '"><svg onload=alert(1)>', "{{7*7}}",
           "</textarea><img src=x onerror=alert(2)>"]


def demo_drafts(locale: str = "deu_Latn_Germany", *, hostile: bool = False,
                flagged: bool = False) -> list[Draft]:
    """One Draft per demo instance of ``locale`` (12); optionally one hostile, one flagged."""
    path = demo_dataset_dir() / f"{locale}.jsonl"
    drafts = []
    for line in path.read_text("utf-8").splitlines():
        row = json.loads(line)
        drafts.append(Draft(
            locale=locale, instance_id=row["id"], source_original=row["source_original"],
            english_original=row["english_original"], source_draft=row["source_localised"],
            english_draft=row["english_localised"],
            raw_answer=f"Source: {row['source_localised']}\nEnglish: {row['english_localised']}",
            flagged=False, flag_reason=None, prompt_hash=PROMPT_HASH))
    if hostile:
        d = drafts[1]
        drafts[1] = replace(
            d, source_draft=f"{HOSTILE[0]} {d.source_draft} {HOSTILE[2]}",
            english_draft=f"{HOSTILE[1]} {d.english_draft} {HOSTILE[3]}",
            raw_answer=f"{HOSTILE[0]}{HOSTILE[1]}{HOSTILE[2]}{HOSTILE[3]}")
    if flagged:
        d = drafts[2]
        drafts[2] = replace(d, source_draft=None, english_draft=None, flagged=True,
                            flag_reason="no 'English:' line in the answer",
                            raw_answer=f"Sure! Here is the localised sentence: {HOSTILE[0]}")
    return drafts


def annotation_document(task, finals: dict[int, tuple[str, str]] | None = None, *,
                        annotator: str = "annotator-1", confirmed: bool = True) -> dict:
    """An annotation file as the tool writes it: every item at its starting pair unless
    ``finals`` gives its final (source, English); actions from the shared rule."""
    from cultivar_assets import __version__
    from cultivar_assets.construction.annotation.task import classify_action, starting_pair

    finals = finals or {}
    stamp = "2026-12-01T10:00:00.000Z"
    items = []
    for d in task.drafts:
        source, english = finals.get(d.instance_id, starting_pair(d))
        items.append({
            "instance_id": d.instance_id, "locale": d.locale,
            "original": {"source": d.source_original, "english": d.english_original},
            "draft": {"source": d.source_draft, "english": d.english_draft,
                      "flagged": d.flagged, "draft_hash": d.draft_hash,
                      "prompt_hash": d.prompt_hash},
            "final": {"source": source, "english": english},
            "action": classify_action(d, source, english),
            "confirmed": confirmed, "updated_at": stamp,
            "confirmed_at": stamp if confirmed else None})
    return {"format": "cultivar-annotation", "schema_version": 1,
            "task": {"task_id": task.task_id, "locale": task.locale,
                     "drafts_hash": task.drafts_hash, "n_items": len(task.drafts),
                     "source_mode": task.source_mode, "tool_version": __version__,
                     "annotator": annotator},
            "saved_at": stamp, "items": items}
