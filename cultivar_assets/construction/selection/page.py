"""The static review page of the named-entity-rich selection (paper §2.1).

One page, ``index.html``, in four sections (selected; candidates not selected; excluded by a rule;
too few entities): every instance's English sentence with its entities highlighted (``<mark>``,
label beside it; added ones and ones whose label is not counted marked apart), the entities a
correction removed, the normalised topic, every rule's outcome, and the decision. The text is
escaped by the templates' autoescaping, never inserted as HTML. The folder is written atomically
(:func:`cultivar_assets.files.replace_folder`). It is a local working page: for FLORES it holds
FLORES text, which must not be re-hosted on a public site.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cultivar_assets import __version__
from cultivar_assets.construction.selection.choice import InstanceOutcome, SelectionResult
from cultivar_assets.files import replace_folder
from cultivar_assets.paths import cultivar_home
from cultivar_assets.site.pages import PageWriter


def default_review_dir() -> Path:
    return cultivar_home() / "construction" / "selection"


@dataclass(frozen=True)
class Piece:
    """A run of the sentence: plain text, or one entity."""

    text: str
    label: str | None = None
    added: bool = False
    counted: bool = True


def sentence_pieces(instance: InstanceOutcome, counted_labels: set[str]) -> list[Piece]:
    """The sentence cut at its kept entities (which never overlap), in order."""
    pieces: list[Piece] = []
    position = 0
    for entity in sorted((e for e in instance.entities if not e.removed),
                         key=lambda e: e.start):
        if entity.start > position:
            pieces.append(Piece(instance.english[position:entity.start]))
        pieces.append(Piece(instance.english[entity.start:entity.end], entity.label,
                            entity.origin == "added", entity.label in counted_labels))
        position = entity.end
    if position < len(instance.english):
        pieces.append(Piece(instance.english[position:]))
    return pieces


def _row(instance: InstanceOutcome, labels: set[str]) -> dict:
    return {
        "id": instance.instance_id, "pieces": sentence_pieces(instance, labels),
        "removed": [e for e in instance.entities if e.removed], "counted": instance.counted,
        "topic": instance.topic, "terms": "; ".join(instance.topic_terms), "rules": instance.rules,
        "status": instance.status, "rank": instance.rank, "overrides": instance.overrides,
        "notes": sorted({e.note for e in instance.entities if e.note}),
    }


def write_selection_review(result: SelectionResult, folder: Path | None = None) -> Path:
    """Write the review page into ``folder`` (default under $CULTIVAR_HOME); its index.html."""
    folder = Path(folder) if folder else default_review_dir()
    labels = set(result.counted_labels)
    sections = [
        ("selected", "Selected", [i for i in result.instances if i.selected]),
        ("candidates", "Candidates not selected",
         [i for i in result.instances if i.candidate and not i.selected]),
        ("excluded", "Excluded by a rule",
         [i for i in result.instances if i.enough_entities and i.excluded_by
          and not i.selected]),
        ("few", f"Fewer than {result.config.min_entities} counted entities",
         [i for i in result.instances if not i.enough_entities and not i.selected]),
    ]
    if result.config.order != "id":  # the selected ones in the order they were chosen
        sections[0][2].sort(key=lambda i: (i.rank or 0))

    def write(work: Path) -> None:
        writer = PageWriter(work, {"version": __version__})
        writer.copy_static(["fonts.css", "style.css"])
        writer.page("index.html", "selection_review.html.j2", result=result,
                    counts=result.counts(), config=result.config,
                    sections=[(key, title, [_row(i, labels) for i in items])
                              for key, title, items in sections])

    replace_folder(folder, write, {"kind": "selection_review",
                                   "fingerprint": result.fingerprint()})
    return folder / "index.html"
