"""Building Cultivar (paper §2): the steps of the ``build_benchmark`` job and ``cultivar build``.

``build_selection``: read the source benchmark, read and check the corrections and manual selection
files against it, run NER and the selection
(:mod:`cultivar_assets.construction.selection.choice`), then write the review page and the DuckDB
records. Every input is checked before anything is written: a bad file stops the step with a
message naming the file and the item, and the database and the review page stay as they were.

``build_localisation``: the LLM drafts of some locales (paper §2.2,
:mod:`cultivar_assets.construction.localisation.localiser`) from the stored selection, written to
DuckDB when every request has an answer (a failed request writes nothing; the answers are cached).

**Drafts that annotators hold are kept** (ours). A server's greedy decoding need not be
reproducible, so drafts localised again can differ from the ones a tool page shows, and then the
files annotators return no longer match. A locale's stored drafts are *held* when any of these
was made from exactly them (same drafts hash): its tool page (``<tools_dir>/<locale>/``, its
manifest), an annotation file for the locale in the annotation folder, or an ingested annotation
file (``raw.annotation_files``). A held locale is not localised again (nothing is sent, nothing
written) unless ``redraft`` (``cultivar build localise --redraft``; the asset's run config
``redraft: true``), and the build says which locales were kept, what holds them and how to
redraft. Exception: a build whose annotation folder is the toolkit's shipped demo folder
(``cultivar demo``) holds nothing: those files are regenerated from the drafts by
``scripts/regenerate_demo_annotations.py``, and ingest refuses them, saying so, when they were
made against other drafts.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cultivar_assets.config_files import read_input_file
from cultivar_assets.construction.annotation.postedit_build import is_demo_folder
from cultivar_assets.construction.config import (
    AnnotationConfig,
    LocalisationConfig,
    SelectionConfig,
)
from cultivar_assets.construction.localisation.localiser import (
    LocalisationRun,
    localisation_inputs,
    localise,
)
from cultivar_assets.construction.localisation.store import (
    read_localisation_run,
    write_localisation,
)
from cultivar_assets.construction.selection.choice import (
    SelectionResult,
    load_manual_selection,
    select_instances,
)
from cultivar_assets.construction.selection.entities import (
    EntityRecogniser,
    SpacyRecogniser,
    load_corrections,
)
from cultivar_assets.construction.selection.page import write_selection_review
from cultivar_assets.construction.selection.store import (
    read_selected_sources,
    read_selection_run,
    write_selection,
)
from cultivar_assets.data.locales import get_locale
from cultivar_assets.data.source_benchmark import SourceBenchmarkConfig, load_source_benchmark
from cultivar_assets.files import read_manifest
from cultivar_assets.store.database import Store


@dataclass(frozen=True)
class SelectionBuild:
    result: SelectionResult
    fingerprint: str
    database: Path
    review_page: Path
    seconds: float  # the whole step
    ner_seconds: float  # loading the pipeline, NER, corrections, rules and the choice


def build_selection(
    source: SourceBenchmarkConfig,
    selection: SelectionConfig,
    store: Store,
    *,
    recogniser: EntityRecogniser | None = None,
    token: str | None = None,
    show_bar: bool = True,
    say: Callable[[str], None] = lambda _message: None,
) -> SelectionBuild:
    """Select the instances to localise and record the selection (see the module docstring)."""
    started = time.perf_counter()
    benchmark = load_source_benchmark(source, token)
    say(f"source benchmark {benchmark.name}: {len(benchmark.instances)} instances, "
        f"{len(benchmark.languages)} source languages ({benchmark.description})")
    corrections = (load_corrections(selection.corrections_file, benchmark)
                   if selection.corrections_file else None)
    manual = (load_manual_selection(selection.selection_file, benchmark)
              if selection.selection_file else None)
    ner_started = time.perf_counter()
    if recogniser is None:
        recogniser = SpacyRecogniser(selection.pipeline, selection.batch_size)
    result = select_instances(benchmark, selection, recogniser, corrections, manual, show_bar)
    ner_seconds = time.perf_counter() - ner_started
    page = write_selection_review(result, Path(selection.review_dir) if selection.review_dir
                                  else None)
    fingerprint = write_selection(store, result, benchmark)
    return SelectionBuild(result, fingerprint, store.path, page, time.perf_counter() - started,
                          ner_seconds)


REDRAFT = "cultivar build localise --redraft"


@dataclass(frozen=True)
class KeptDrafts:
    """A locale whose stored drafts were kept, and what holds them (module docstring)."""

    locale: str
    task_id: str
    held_by: tuple[str, ...]
    other_selection: bool = False  # they were made from another selection than the stored one

    def message(self) -> str:
        other = (" They were made from another selection than the current one, so they do not "
                 "cover it; redraft to localise the current selection." if self.other_selection
                 else "")
        return (f"{self.locale}: kept its drafts (task {self.task_id}), not localised again: "
                f"{'; '.join(self.held_by)} {'was' if len(self.held_by) == 1 else 'were'} made "
                f"from them. To replace them: {REDRAFT} --locale {self.locale} (Dagster: "
                "materialise localised_drafts with run config redraft: true); the tool page and "
                f"annotation files made from the old drafts then no longer match.{other}")


@dataclass(frozen=True)
class LocalisationBuild:
    """What ``build_localisation`` did: the run (None when every locale was kept), the kept
    locales, and each requested locale's ``localisation_summary`` row as stored afterwards."""

    run: LocalisationRun | None
    kept: dict[str, KeptDrafts]
    summary: dict[str, dict[str, Any]]


def draft_holders(store: Store, locale: str, annotation: AnnotationConfig) -> tuple[str, ...]:
    """What was made from ``locale``'s stored drafts (module docstring); empty when nothing, when
    it has no drafts, or for the shipped demo annotation folder."""
    folder = annotation.folder_path()
    stored = read_localisation_run(store, locale) if store.path.exists() else None
    if stored is None or is_demo_folder(folder):
        return ()
    wanted = stored["drafts_hash"]
    held = []
    page = annotation.tools_path() / locale
    if (read_manifest(page) or {}).get("drafts_hash") == wanted:
        held.append(f"the tool page {page / 'index.html'}")
    for path in sorted(folder.glob(f"{locale}-*.json")) if folder.is_dir() else []:
        try:
            data = read_input_file(path, "annotation file", int(annotation.max_file_mb * 1e6))
            header = json.loads(data.decode("utf-8-sig"))["task"]
        except (ValueError, KeyError, TypeError):  # ConfigFileError too: not one that holds it
            continue
        if isinstance(header, dict) and header.get("drafts_hash") == wanted:
            held.append(f"the annotation file {path}")
    for row in store.query("annotation_file_headers"):
        if row["locale"] == locale and row["drafts_hash"] == wanted:
            held.append(f"the ingested annotation file {row['file_name']}")
    return tuple(held)


def build_localisation(
    config: LocalisationConfig,
    store: Store,
    locales: Sequence[str] | None = None,
    *,
    annotation: AnnotationConfig | None = None,
    redraft: bool = False,
    cache_dir: Path | None = None,
    show_bar: bool = True,
    say: Callable[[str], None] = lambda _message: None,
) -> LocalisationBuild:
    """Localise ``locales`` (default: the configured ones) and store their drafts, keeping the
    drafts of held locales unless ``redraft`` (module docstring; ``annotation``: where tool
    pages and annotation files are, default the default folders)."""
    keys = list(locales) if locales is not None else config.locale_keys()
    for key in keys:
        get_locale(key)  # an unknown locale raises, with close matches
    if not keys:
        raise ValueError("no locales to localise")
    if not store.path.exists():
        raise LookupError(f"{store.path} holds no selection (the database does not exist yet); "
                          "materialise selected_instances first (cultivar build select)")
    try:
        selection = read_selection_run(store)
    except LookupError as error:
        raise LookupError(f"{error} (cultivar build select)") from None
    annotation = annotation or AnnotationConfig()
    kept = {}
    for key in [] if redraft else keys:
        held = draft_holders(store, key, annotation)
        if held:
            stored = read_localisation_run(store, key)
            kept[key] = KeptDrafts(key, stored["task_id"], held,
                                   stored["selection_fingerprint"] != selection["fingerprint"])
            say(kept[key].message())
    todo = [key for key in keys if key not in kept]
    run = None
    if todo:
        inputs = localisation_inputs(read_selected_sources(store), todo)
        say(f"localising {sum(map(len, inputs.values()))} pairs for {len(todo)} locale(s) with "
            f"{config.model} ({config.engine}), prompt {config.prompt}")
        run = localise(inputs, config, cache_dir=cache_dir, show_bar=show_bar, say=say)
        write_localisation(store, run, selection["fingerprint"], bool(selection["is_demo"]))
    summary = {key: read_localisation_run(store, key) for key in keys}
    return LocalisationBuild(run, kept, summary)
