"""LLM localisation drafts (paper §2.2): what the localisation step produces and people post-edit.

A *draft* is one instance of one locale as the LLM returned it: the original source–English pair
of the source benchmark and the localised pair parsed from the LLM's answer. A draft whose answer
could not be parsed (after the bounded retries) is kept and *flagged*, with the raw answer, for
the annotator; it is never dropped and never replaced by the original.

Hashes (all sha256, hex):

- ``draft_hash`` of one draft: of the canonical JSON of
  ``[locale, instance_id, source_original, english_original, source_draft, english_draft,
  raw_answer, flagged]``; changes whenever anything the annotator sees changes;
- ``drafts_hash`` of a locale's drafts: of the canonical JSON of their ``[instance_id,
  draft_hash]`` pairs in id order; an annotation file records it, so a file made against other
  drafts is recognised;
- ``prompt_hash``: of the prompt template's definition (see the localisation prompt registry).

A *task* is one locale's set of drafts handed to annotators: ``task_id`` is
``<locale>-<drafts_hash[:12]>``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass


def _sha256(value: object) -> str:
    blob = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Draft:
    """One LLM-localised instance (see the module docstring)."""

    locale: str
    instance_id: int
    source_original: str
    english_original: str
    source_draft: str | None  # None when the answer could not be parsed (flagged)
    english_draft: str | None
    raw_answer: str  # the LLM's last answer, as returned
    flagged: bool
    flag_reason: str | None
    prompt_hash: str

    @property
    def draft_hash(self) -> str:
        return _sha256([self.locale, self.instance_id, self.source_original,
                        self.english_original, self.source_draft, self.english_draft,
                        self.raw_answer, self.flagged])

    def as_dict(self) -> dict:
        return {**asdict(self), "draft_hash": self.draft_hash}


def drafts_hash(drafts: Sequence[Draft]) -> str:
    """The hash of a locale's drafts (see the module docstring)."""
    return _sha256([[d.instance_id, d.draft_hash] for d in sorted(drafts,
                                                                   key=lambda d: d.instance_id)])


def task_id(locale: str, drafts: Sequence[Draft]) -> str:
    """``<locale>-<drafts_hash[:12]>``: names one post-editing task."""
    return f"{locale}-{drafts_hash(drafts)[:12]}"
