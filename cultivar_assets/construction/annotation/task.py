"""A post-editing task (one locale's drafts) and the rules that classify an annotator's answer.

The tool (``postedit_tool.py``), the annotation file validator (``file.py``) and
Table 1 (``stats.py``) all use these definitions; the tool's JavaScript
(``site/static/postedit.js``) repeats :func:`classify_action` and :func:`starting_pair`.

**Starting pair** (what the edit boxes hold at first, and what "kept" and the edit counts refer
to): the LLM paraphrase (``source_draft``, ``english_draft``); for a *flagged* draft, whose answer
could not be parsed, there is no paraphrase, so the boxes start from the original pair (ours).

**Action** of a final pair (exact string comparison, both sides):

- ``kept``: the final pair equals the LLM paraphrase (never for a flagged draft);
- ``reverted``: otherwise, the final pair equals the original FLORES pair;
- ``edited``: anything else (one side or both differ from the paraphrase and from the original).

A final text is stored exactly as the annotator left it (the tool trims nothing), so a change of
whitespace only makes an item ``edited`` (with zero token edits, see ``text_edits.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from cultivar_assets.construction.annotation.text_edits import Mode, mode_for_locale
from cultivar_assets.construction.localisation.drafts import Draft, drafts_hash, task_id

Action = Literal["kept", "edited", "reverted"]
ACTIONS: tuple[Action, ...] = ("kept", "edited", "reverted")


def starting_pair(draft: Draft) -> tuple[str, str]:
    """The pair the edit boxes start with (the paraphrase; the original when flagged)."""
    if draft.flagged or draft.source_draft is None or draft.english_draft is None:
        return draft.source_original, draft.english_original
    return draft.source_draft, draft.english_draft


def classify_action(draft: Draft, source_final: str, english_final: str) -> Action:
    """``kept``, ``reverted`` or ``edited`` (see the module docstring)."""
    final = (source_final, english_final)
    if not draft.flagged and final == (draft.source_draft, draft.english_draft):
        return "kept"
    if final == (draft.source_original, draft.english_original):
        return "reverted"
    return "edited"


@dataclass(frozen=True)
class AnnotationTask:
    """One locale's drafts, handed to annotators as one task (ids in ascending order)."""

    task_id: str
    locale: str
    drafts_hash: str
    source_mode: Mode
    drafts: tuple[Draft, ...]

    @classmethod
    def from_drafts(cls, drafts: Sequence[Draft]) -> AnnotationTask:
        """The task of ``drafts``: one locale, unique instance ids, at least one draft."""
        if not drafts:
            raise ValueError("a post-editing task needs at least one draft")
        locales = sorted({d.locale for d in drafts})
        if len(locales) != 1:
            raise ValueError(f"a post-editing task holds one locale's drafts, got {locales}")
        ids = [d.instance_id for d in drafts]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"{locales[0]}: instance ids occur more than once: {duplicates}")
        ordered = tuple(sorted(drafts, key=lambda d: d.instance_id))
        return cls(task_id=task_id(locales[0], ordered), locale=locales[0],
                   drafts_hash=drafts_hash(ordered), source_mode=mode_for_locale(locales[0]),
                   drafts=ordered)

    def by_id(self) -> dict[int, Draft]:
        return {d.instance_id: d for d in self.drafts}

    def payload(self, tool_version: str, schema_version: int) -> dict[str, Any]:
        """What the tool's page embeds: the task header and every draft, as JSON-ready data."""
        return {
            "task": {"task_id": self.task_id, "locale": self.locale,
                     "drafts_hash": self.drafts_hash, "n_items": len(self.drafts),
                     "source_mode": self.source_mode, "tool_version": tool_version},
            "schema_version": schema_version,
            "items": [
                {"instance_id": d.instance_id, "key": f"{d.locale}_{d.instance_id}",
                 "original": {"source": d.source_original, "english": d.english_original},
                 "draft": {"source": d.source_draft, "english": d.english_draft,
                           "flagged": d.flagged, "flag_reason": d.flag_reason,
                           "raw_answer": d.raw_answer, "draft_hash": d.draft_hash,
                           "prompt_hash": d.prompt_hash, "checks": list(d.checks)},
                 "start": dict(zip(("source", "english"), starting_pair(d), strict=True))}
                for d in self.drafts
            ],
        }
