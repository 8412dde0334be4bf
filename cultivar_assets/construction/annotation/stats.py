"""Table 1 of the paper (summary of human edits per locale), computed from annotation files.

Per locale, over its confirmed annotations (``file.Annotation``): ``kept_llm_paraphrase`` (action
``kept``), ``reverted_to_flores`` (``reverted``), and ``edited_source_only`` /
``edited_target_only`` / ``edited_both`` (``edited``, by which sides differ from the starting
text: the paraphrase, or the original for a flagged draft); the five add up to ``n_instances``.
``avg_edits_source`` = Σ source edits / the *revised* instances (edited or reverted) whose source
changed, ``avg_edits_english`` likewise; None when none qualifies. An *edit* is a maximal run of
changed tokens between the starting and the final text (``text_edits.count_edits``).

Ours, where the paper leaves it open: the denominators (the paper counts edits only for revised
instances; dividing by those whose side *changed* is what its figures require: pol_Latn_Poland's
19 target-only, 2 both and 3 reverted instances with 4.28 edits per source would otherwise mean
some 20 edits in each of at most 5 changed sources); the tokenisation (``text_edits.py``); and
flagged drafts, whose boxes start from the original pair, so one left as the original is
``reverted`` and one changed ``edited``, counted from the original (``n_flagged`` says how many).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

from cultivar_assets.construction.annotation.file import Annotation

TABLE1_FIELDS = ("kept_llm_paraphrase", "reverted_to_flores", "edited_source_only",
                 "edited_target_only", "edited_both", "avg_edits_source", "avg_edits_english")


@dataclass(frozen=True)
class Table1Row:
    """One locale's row of Table 1 (module docstring), with its counts of instances."""

    locale: str
    n_instances: int
    n_flagged: int
    kept_llm_paraphrase: int
    reverted_to_flores: int
    edited_source_only: int
    edited_target_only: int
    edited_both: int
    avg_edits_source: float | None
    avg_edits_english: float | None
    n_revised_source_changed: int  # the denominator of avg_edits_source
    n_revised_english_changed: int  # the denominator of avg_edits_english

    def as_dict(self) -> dict:
        return asdict(self)


def table1_row(locale: str, annotations: Iterable[Annotation]) -> Table1Row:
    """Table 1 for ``locale`` from its annotations (only confirmed ones may be passed)."""
    items = list(annotations)
    unconfirmed = [a.instance_id for a in items if not a.confirmed]
    if unconfirmed:
        raise ValueError(f"{locale}: Table 1 counts confirmed annotations only; unconfirmed: "
                         f"{unconfirmed}")
    others = sorted({a.locale for a in items} - {locale})
    if others:
        raise ValueError(f"annotations of other locales given for {locale}: {others}")
    edited = [a for a in items if a.action == "edited"]
    revised = [a for a in items if a.action in ("edited", "reverted")]
    source_edits = [a.source_edits for a in revised if a.source_changed]
    english_edits = [a.english_edits for a in revised if a.english_changed]
    return Table1Row(
        locale=locale,
        n_instances=len(items),
        n_flagged=sum(a.flagged for a in items),
        kept_llm_paraphrase=sum(a.action == "kept" for a in items),
        reverted_to_flores=sum(a.action == "reverted" for a in items),
        edited_source_only=sum(a.source_changed and not a.english_changed for a in edited),
        edited_target_only=sum(a.english_changed and not a.source_changed for a in edited),
        edited_both=sum(a.source_changed and a.english_changed for a in edited),
        avg_edits_source=sum(source_edits) / len(source_edits) if source_edits else None,
        avg_edits_english=sum(english_edits) / len(english_edits) if english_edits else None,
        n_revised_source_changed=len(source_edits),
        n_revised_english_changed=len(english_edits),
    )
