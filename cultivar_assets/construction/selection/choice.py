"""Named-entity-rich selection (paper §2.1), step by step.

For every instance of the source benchmark: 1. NER over the English side
(:mod:`cultivar_assets.construction.selection.entities`); 2. the corrections file, when given,
adds and removes entities; 3. *counted entities* are those that stay whose label is counted
(``counted_labels``; default every label), and the instance has *enough entities* when
``counted >= min_entities``; 4. every enabled exclusion rule
(:mod:`cultivar_assets.construction.selection.rules`) gives its outcome; 5. *candidate* = enough
entities and no rule excludes it.

The selection is the ids of a *manual selection file* (YAML or JSON: ``selected: [3, 17, 42]``,
each id once, and an optional ``note``), which wins (a person's choice is kept even when the count
or a rule would drop it, each override recorded), or else the first ``n`` candidates in ``order``
(``n: null``: every candidate). Fewer candidates than ``n`` is an error, never a smaller benchmark
in silence. Orders (ties never depend on input order): ``hash``, ascending sha256 of
``"<seed>:<id>"``; ``most_entities``, most counted entities first, then ``hash``; ``id``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cultivar_assets.construction.config import SelectionConfig
from cultivar_assets.construction.errors import ConstructionError
from cultivar_assets.construction.selection.entities import (
    Corrections,
    Entity,
    EntityRecogniser,
    NerInfo,
    apply_corrections,
    read_yaml_file,
    validation_message,
)
from cultivar_assets.construction.selection.rules import RuleOutcome, evaluate_rules, topic_terms
from cultivar_assets.data.source_benchmark import SourceBenchmark


class _SelectionFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    selected: list[int] = Field(min_length=1)
    note: str | None = None


@dataclass(frozen=True)
class ManualSelection:
    path: str
    sha256: str
    ids: tuple[int, ...]  # in the file's order
    note: str | None


def load_manual_selection(path: str | Path, benchmark: SourceBenchmark) -> ManualSelection:
    """Read a manual selection file and check its ids against the benchmark."""
    path = Path(path)
    raw = read_yaml_file(path, "selection file")
    try:
        parsed = _SelectionFile.model_validate(raw if raw is not None else {})
    except ValidationError as error:
        raise ConstructionError(validation_message(path, error)) from None
    ids = parsed.selected
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ConstructionError(f"{path}: ids listed more than once: {twice[:10]}")
    known = set(benchmark.ids())
    outside = [i for i in ids if i not in known]
    if outside:
        raise ConstructionError(
            f"{path}: ids {outside[:10]} are not in the source benchmark {benchmark.name} "
            f"({len(known)} instances, ids {min(known)}–{max(known)})")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return ManualSelection(str(path), digest, tuple(ids), parsed.note)


@dataclass(frozen=True)
class InstanceOutcome:
    """What the selection found and decided for one instance."""

    instance_id: int
    english: str
    domain: str | None
    topic: str | None
    topic_terms: tuple[str, ...]
    entities: tuple[Entity, ...]  # spaCy's (removed ones flagged) and added ones, by start
    counted: int  # entities that stay and whose label is counted
    enough_entities: bool  # counted >= min_entities
    rules: tuple[RuleOutcome, ...]
    candidate: bool  # enough entities and no rule excludes it
    selected: bool = False
    selected_by: str | None = None  # "order" or "manual"
    rank: int | None = None  # 1-based place in the order, or in the manual selection file
    overrides: tuple[str, ...] = ()  # manual selection over: "min_entities" and rule names

    @property
    def excluded_by(self) -> tuple[str, ...]:
        return tuple(outcome.rule for outcome in self.rules if outcome.excluded)

    @property
    def status(self) -> str:
        if self.selected:
            return f"selected ({self.selected_by})"
        if self.candidate:
            return "candidate"
        if not self.enough_entities:
            return "too few entities"
        return "excluded: " + ", ".join(self.excluded_by)


@dataclass(frozen=True)
class SelectionResult:
    """The outcome of the selection over a whole source benchmark."""

    source_name: str
    source_description: str
    source_fingerprint: str
    is_demo: bool
    instances: tuple[InstanceOutcome, ...]
    config: SelectionConfig
    ner: NerInfo
    counted_labels: tuple[str, ...]
    corrections: Corrections | None = None
    manual: ManualSelection | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def selected(self) -> list[InstanceOutcome]:
        """The selected instances, in id order."""
        return [inst for inst in self.instances if inst.selected]

    def counts(self) -> dict[str, int]:
        """Counts of the report. ``excluded_by_<rule>`` counts instances with enough entities."""
        enough = [i for i in self.instances if i.enough_entities]
        counts = {
            "instances": len(self.instances),
            "with_entities": sum(1 for i in self.instances if i.counted >= 1),
            "with_enough_entities": len(enough),
        }
        for rule in self.config.rules:
            counts[f"excluded_by_{rule}"] = sum(1 for i in enough if rule in i.excluded_by)
        counts.update({
            "candidates": sum(1 for i in self.instances if i.candidate),
            "selected": len(self.selected),
            "selected_manually": sum(1 for i in self.instances if i.selected_by == "manual"),
            "manual_overrides": sum(1 for i in self.instances if i.overrides),
            "without_topic": sum(1 for i in self.instances if not i.topic_terms),
            "corrected_instances": len(self.corrections.by_id) if self.corrections else 0,
        })
        return counts

    def fingerprint(self) -> str:
        """sha256 of the inputs and every decision: changes whenever the selection does."""
        payload = {
            "source": self.source_fingerprint,
            "config": self.config.model_dump(mode="json"),
            "ner": [self.ner.spacy_version, self.ner.pipeline, self.ner.pipeline_version],
            "corrections": self.corrections.sha256 if self.corrections else None,
            "manual": self.manual.sha256 if self.manual else None,
            "instances": [
                [i.instance_id, [[e.start, e.end, e.label, e.origin, e.removed]
                                 for e in i.entities],
                 [[o.rule, o.excluded] for o in i.rules], i.selected, i.rank]
                for i in self.instances
            ],
        }
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")
        return hashlib.sha256(blob).hexdigest()


def order_key(config: SelectionConfig, instance: InstanceOutcome) -> tuple:
    """The sort key of ``config.order`` (see the module docstring)."""
    digest = hashlib.sha256(f"{config.seed}:{instance.instance_id}".encode()).hexdigest()
    if config.order == "id":
        return (instance.instance_id,)
    if config.order == "most_entities":
        return (-instance.counted, digest)
    return (digest,)


def counted_labels(config: SelectionConfig, ner: NerInfo) -> tuple[str, ...]:
    """The labels that count: the configured ones (checked against the pipeline) or all."""
    if config.counted_labels is None:
        return ner.labels
    unknown = [label for label in config.counted_labels if label not in ner.labels]
    if unknown:
        raise ConstructionError(
            f"counted_labels {unknown} are not labels of {ner.pipeline} {ner.pipeline_version} "
            f"(its labels: {', '.join(ner.labels)})")
    return tuple(config.counted_labels)


def select_instances(
    benchmark: SourceBenchmark,
    config: SelectionConfig,
    recogniser: EntityRecogniser,
    corrections: Corrections | None = None,
    manual: ManualSelection | None = None,
    show_bar: bool = True,
) -> SelectionResult:
    """NER, corrections, counts, rules and the choice (see the module docstring)."""
    labels = counted_labels(config, recogniser.info)
    instances = benchmark.instances
    if not instances:
        raise ConstructionError(f"{benchmark.english_file}: the English side is empty")
    sentences = {inst.instance_id: inst.english for inst in instances}
    found_list = recogniser.recognise([inst.english for inst in instances], show_bar=show_bar)
    found = {inst.instance_id: ents for inst, ents in zip(instances, found_list, strict=True)}
    entities = apply_corrections(sentences, found, corrections, recogniser.info.labels)

    outcomes: list[InstanceOutcome] = []
    for inst in instances:
        ents = entities[inst.instance_id]
        terms = topic_terms(inst.topic, config.topic_spellings)
        counted = sum(1 for e in ents if not e.removed and e.label in labels)
        rules = evaluate_rules(ents, terms, config)
        enough = counted >= config.min_entities
        outcomes.append(InstanceOutcome(
            inst.instance_id, inst.english, inst.domain, inst.topic, terms, ents, counted, enough,
            rules, enough and not any(r.excluded for r in rules)))

    notes: list[str] = []
    if manual is not None:
        chosen = _choose_manually(outcomes, manual, config, notes)
    else:
        chosen = _choose_in_order(outcomes, config)
    return SelectionResult(benchmark.name, benchmark.description, benchmark.fingerprint(),
                           benchmark.is_demo, tuple(chosen), config, recogniser.info, labels,
                           corrections, manual, tuple(notes))


def _choose_in_order(outcomes: Sequence[InstanceOutcome],
                     config: SelectionConfig) -> list[InstanceOutcome]:
    candidates = sorted((o for o in outcomes if o.candidate), key=lambda o: order_key(config, o))
    if config.n is not None and len(candidates) < config.n:
        raise ConstructionError(
            f"only {len(candidates)} instances are candidates (≥ {config.min_entities} counted "
            f"entities, not excluded by {', '.join(config.rules) or 'any rule'}) but n = "
            f"{config.n}; lower n, set n: null (every candidate), relax the rules, or give a "
            "selection file")
    ranks = {o.instance_id: k for k, o in enumerate(candidates[:config.n], 1)}
    return [
        _selected(o, "order", ranks[o.instance_id]) if o.instance_id in ranks else o
        for o in outcomes
    ]


def _selected(outcome: InstanceOutcome, by: str, rank: int,
              overrides: tuple[str, ...] = ()) -> InstanceOutcome:
    return replace(outcome, selected=True, selected_by=by, rank=rank, overrides=overrides)


def _choose_manually(outcomes: Sequence[InstanceOutcome], manual: ManualSelection,
                     config: SelectionConfig, notes: list[str]) -> list[InstanceOutcome]:
    ranks = {instance_id: k for k, instance_id in enumerate(manual.ids, 1)}
    chosen = []
    overridden = []
    for outcome in outcomes:
        if outcome.instance_id not in ranks:
            chosen.append(outcome)
            continue
        overrides = (("min_entities",) if not outcome.enough_entities else ()) + (
            outcome.excluded_by)
        if overrides:
            overridden.append(f"{outcome.instance_id} ({', '.join(overrides)})")
        chosen.append(_selected(outcome, "manual", ranks[outcome.instance_id], overrides))
    notes.append(f"selection from {manual.path} ({len(manual.ids)} ids); n and order are not "
                 "used")
    if config.n is not None and len(manual.ids) != config.n:
        notes.append(f"the selection file has {len(manual.ids)} ids, n is {config.n}")
    if overridden:
        notes.append("selected by hand although the count or a rule would drop them: "
                     + ", ".join(overridden))
    return chosen
