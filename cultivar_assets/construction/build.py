"""Building Cultivar (paper §2): the steps of the ``build_benchmark`` job and ``cultivar build``.

``build_selection``: read the source benchmark, read and check the corrections and manual selection
files against it, run NER and the selection (:mod:`cultivar_assets.construction.selection`), then
write the review page and the DuckDB records. Every input is checked before anything is written: a
bad file stops the step with a message naming the file and the item, and the database and the
review page stay as they were.

``build_localisation``: the LLM drafts of some locales (paper §2.2,
:mod:`cultivar_assets.construction.localisation`) from the stored selection, written to DuckDB
when every request has an answer (a failed request writes nothing; the answers are cached).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cultivar_assets.construction.config import LocalisationConfig, SelectionConfig
from cultivar_assets.construction.entities import (
    EntityRecogniser,
    SpacyRecogniser,
    load_corrections,
)
from cultivar_assets.construction.localisation import (
    LocalisationRun,
    localisation_inputs,
    localise,
)
from cultivar_assets.construction.localisation_store import write_localisation
from cultivar_assets.construction.selection import (
    SelectionResult,
    load_manual_selection,
    select_instances,
)
from cultivar_assets.construction.selection_page import write_selection_review
from cultivar_assets.construction.selection_store import (
    read_selected_sources,
    read_selection_run,
    write_selection,
)
from cultivar_assets.data.locales import get_locale
from cultivar_assets.data.source_benchmark import SourceBenchmarkConfig, load_source_benchmark
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


def build_localisation(
    config: LocalisationConfig,
    store: Store,
    locales: Sequence[str] | None = None,
    *,
    cache_dir: Path | None = None,
    show_bar: bool = True,
    say: Callable[[str], None] = lambda _message: None,
) -> LocalisationRun:
    """Localise ``locales`` (default: the configured ones) and store their drafts."""
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
    inputs = localisation_inputs(read_selected_sources(store), keys)
    say(f"localising {sum(map(len, inputs.values()))} pairs for {len(keys)} locale(s) with "
        f"{config.model} ({config.engine}), prompt {config.prompt}")
    run = localise(inputs, config, cache_dir=cache_dir, show_bar=show_bar, say=say)
    write_localisation(store, run, selection["fingerprint"], bool(selection["is_demo"]))
    return run
