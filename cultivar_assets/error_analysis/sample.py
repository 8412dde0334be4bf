"""The error-analysis sample (paper §5): one annotation task per locale, models × instances.

For each configured locale (``config.ErrorAnalysisConfig``) with data, the task holds, for
the sampled instances and every sampled model, the localised source, the localised English
reference, the original English reference and the model's translation of the localised source
(its ``cultivar_<locale>`` hypothesis, as stored). Instances: those every sampled model
translated, in the order of sha256(``"<seed>:<locale>:<id>"``), the first ``n_instances`` (all
when None); the same instances for every model. Within an instance, the systems follow the order
of sha256(``"<seed>:<locale>:<model>"``) and are labelled "system 1", "system 2", ... when the
page is ``blind`` (else by model id).

A task's id is ``<locale>-errors-<hash>``, the hash (sha256, 12 hex digits) of what the annotator
sees apart from the translations: the locale, seed, blindness, models and their labels, instance
ids in order and the texts of sources and references. The translations are checked item by item
(``hypothesis_sha256``) when a file comes back, so a file made for another sample is the wrong
file, and a file whose translations changed since says which ones.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from cultivar_assets.data.locales import cultivar_test_set_name, get_locale
from cultivar_assets.error_analysis.config import ErrorAnalysisConfig
from cultivar_assets.store.database import Store


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _order(seed: str, locale: str, value: object) -> str:
    return hashlib.sha256(f"{seed}:{locale}:{value}".encode()).hexdigest()


@dataclass(frozen=True)
class ErrorItem:
    """One translation to annotate."""

    key: str  # "<locale>_<instance id>:<model id>", unique in the task
    model_id: str
    system: str  # what the page calls it ("system 2" when blind, else the model id)
    locale: str
    instance_id: int
    source: str  # localised source
    reference: str  # localised English reference
    original_reference: str | None  # original (FLORES) English, when the data has it
    hypothesis: str
    hypothesis_sha256: str
    # original (FLORES) source, when the data has it: only for the page's highlights (what
    # localisation changed in the source); ours: not part of the task id, so task ids and the
    # files made for them stay as they were before the page showed it
    original_source: str | None = None


@dataclass(frozen=True)
class ErrorTask:
    """One locale's annotation task (module docstring)."""

    task_id: str
    locale: str
    seed: str
    blind: bool
    models: tuple[str, ...]  # in system order
    instance_ids: tuple[int, ...]  # in sample order
    items: tuple[ErrorItem, ...]  # instance by instance, systems in order

    @property
    def translations_hash(self) -> str:
        return text_sha256("\n".join(f"{i.key} {i.hypothesis_sha256}" for i in self.items))

    def by_key(self) -> dict[str, ErrorItem]:
        return {item.key: item for item in self.items}


@dataclass(frozen=True)
class ErrorSample:
    tasks: tuple[ErrorTask, ...]
    models: tuple[str, ...]
    notes: tuple[str, ...]  # what was left out of the sample, and why

    def by_locale(self) -> dict[str, ErrorTask]:
        return {task.locale: task for task in self.tasks}


def _task(config: ErrorAnalysisConfig, locale: str, models: list[str], instances: dict[int, dict],
          hypotheses: dict[str, dict[int, str]], notes: list[str]) -> ErrorTask | None:
    shared = set(instances)
    for model in models:
        mine = set(hypotheses.get(model, {}))
        if shared - mine:
            notes.append(f"{locale}: {model} has no translation of {len(shared - mine)} "
                         "instance(s); they are left out of the locale's sample")
        shared &= mine
    if not shared:
        notes.append(f"{locale}: no instance is translated by every sampled model; no task")
        return None
    ids = sorted(shared, key=lambda i: _order(config.seed, locale, i))
    if config.n_instances is not None:
        ids = ids[:config.n_instances]
    ordered = sorted(models, key=lambda m: _order(config.seed, locale, m))
    labels = {m: (f"system {k}" if config.blind else m) for k, m in enumerate(ordered, 1)}
    items = []
    for iid in ids:
        inst = instances[iid]
        for model in ordered:
            hyp = hypotheses[model][iid]
            items.append(ErrorItem(f"{locale}_{iid}:{model}", model, labels[model], locale, iid,
                                   inst["source_localised"], inst["english_localised"],
                                   inst["english_original"], hyp, text_sha256(hyp),
                                   inst["source_original"]))
    shown = json.dumps({
        "locale": locale, "seed": config.seed, "blind": config.blind,
        "systems": [[m, labels[m]] for m in ordered], "instances": ids,
        "texts": [[text_sha256(instances[i]["source_localised"]),
                   text_sha256(instances[i]["english_localised"]),
                   text_sha256(instances[i]["english_original"] or "")] for i in ids],
    }, sort_keys=True, ensure_ascii=False)
    task_id = f"{locale}-errors-{text_sha256(shown)[:12]}"
    return ErrorTask(task_id, locale, config.seed, config.blind, tuple(ordered), tuple(ids),
                     tuple(items))


def build_error_sample(store: Store, config: ErrorAnalysisConfig) -> ErrorSample:
    """The tasks of the configured sample, from the stored instances and translations."""
    notes: list[str] = []
    evaluated = [row["model_id"] for row in store.query("leaderboard")]
    if config.models is None:
        models = evaluated
    else:
        models = [m for m in dict.fromkeys(config.models) if m in evaluated]
        for model in config.models:
            if model not in evaluated:
                notes.append(f"model {model} is not on the leaderboard (not evaluated or not "
                             "aggregated); left out of the sample")
    if not models:
        notes.append("no evaluated model to sample; no task")
        return ErrorSample((), (), tuple(notes))
    instances: dict[str, dict[int, dict]] = {}
    for row in store.query("instances"):
        instances.setdefault(row["locale"], {})[row["instance_id"]] = row
    tasks = []
    for locale in dict.fromkeys(config.locales):
        get_locale(locale)  # an unknown key is an error naming close matches
        if locale not in instances:
            notes.append(f"{locale}: not in the loaded data; left out of the sample")
            continue
        hypotheses: dict[str, dict[int, str]] = {}
        for row in store.query("locale_translations", test_set=cultivar_test_set_name(locale)):
            if row["model_id"] in models:
                hypotheses.setdefault(row["model_id"], {})[row["segment_id"]] = row["hypothesis"]
        task = _task(config, locale, models, instances[locale], hypotheses, notes)
        if task is not None:
            tasks.append(task)
    return ErrorSample(tuple(tasks), tuple(models), tuple(notes))
