"""What the runner's reuse decisions rest on, without Dagster: step records in DuckDB (kept by the
runner's own writes, forgotten by any other), the digests of code, installed packages, files and
outputs, and the steps' inputs: each input changed makes a different fingerprint."""

from __future__ import annotations

import re
import shutil
import sys
import typing
from pathlib import Path

import duckdb
import pytest
from pydantic import BaseModel

from cultivar_assets.assets.graph import STEP_GRAPH
from cultivar_assets.construction.config import demo_construction
from cultivar_assets.data.sources import DataConfig, demo_dataset_dir
from cultivar_assets.error_analysis.config import demo_error_analysis
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.models import load_models
from cultivar_assets.settings import Settings
from cultivar_assets.steps import changes, digests
from cultivar_assets.steps import plan as steps
from cultivar_assets.steps.reuse import ConcurrentWriteError, StepBook
from cultivar_assets.store.database import (
    Store,
    recording_steps,
    running_step,
    writing_for_steps,
)
from cultivar_assets.store.records import write_reported_results
from cultivar_assets.store.step_records import (
    finish_step_run,
    new_record,
    put_step_record,
    read_step_records,
    start_step_run,
)

REPO = Path(__file__).resolve().parents[1]


def _reported(store: Store) -> None:
    """A real write of the store (the paper's reported figures)."""
    registry = load_models()
    write_reported_results(store, [registry.get(m) for m in registry])


def test_records_survive_the_runners_writes_and_no_other(tmp_path):
    store = Store(tmp_path / "r.duckdb")
    assert read_step_records(store) == {}  # no file yet
    with recording_steps():
        _reported(store)
        put_step_record(store, new_record("results", "i" * 64, "o" * 64, 1.5))
        _reported(store)  # a step's own write keeps the records
    (record,) = read_step_records(store).values()
    assert (record.step, record.inputs, record.outputs, record.seconds) == (
        "results", "i" * 64, "o" * 64, 1.5)
    assert store.query("read_step_records")[0]["token"] == record.token
    _reported(store)  # any other write forgets every record, in its own transaction
    assert read_step_records(store) == {}


def test_a_database_without_the_table_has_no_records(tmp_path):
    path = tmp_path / "old.duckdb"
    duckdb.connect(str(path)).close()
    assert read_step_records(Store(path)) == {}


def test_tree_digest_follows_content_and_paths_not_byte_code(tmp_path):
    tree = tmp_path / "pkg"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "a.py").write_text("x = 1\n")
    before = digests.tree_digest({"pkg": tree})
    (tree / "sub" / "__pycache__").mkdir()
    (tree / "sub" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert digests.tree_digest({"pkg": tree}) == before
    (tree / "sub" / "a.py").write_text("x = 2\n")
    changed = digests.tree_digest({"pkg": tree})
    assert changed != before
    (tree / "sub" / "a.py").rename(tree / "sub" / "b.py")
    assert digests.tree_digest({"pkg": tree}) not in (before, changed)


def test_the_code_digest_covers_every_tracked_file_of_the_package_sql_and_site():
    roots = digests.code_roots()
    tracked = [REPO / line for line in _git_files("cultivar_assets", "sql", "site")]
    assert tracked
    assert all(any(path.resolve().is_relative_to(root) for root in roots.values())
               for path in tracked)
    assert re.fullmatch(r"[0-9a-f]{64}", digests.code_digest())


def _git_files(*folders: str) -> list[str]:
    import subprocess

    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", *folders], capture_output=True,
                            text=True, check=True).stdout
    return [line for line in listed.splitlines() if (REPO / line).is_file()]


def test_the_environment_digest_changes_with_an_installed_distribution(tmp_path, monkeypatch):
    digests.environment_digest.cache_clear()
    before = digests.environment_digest()
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path)])
    digests.environment_digest.cache_clear()
    assert digests.environment_digest() == before
    (tmp_path / "newpackage-1.0.dist-info").mkdir()
    digests.environment_digest.cache_clear()
    try:
        assert digests.environment_digest() != before
    finally:
        digests.environment_digest.cache_clear()


def test_the_outputs_listing_sees_changed_added_and_removed_files(tmp_path):
    out = tmp_path / "site"
    out.mkdir()
    (out / "index.html").write_text("a")
    before = digests.listing_digest([out, tmp_path / "absent"])
    assert digests.listing_digest([out, tmp_path / "absent"]) == before
    (out / "extra.html").write_text("b")
    with_extra = digests.listing_digest([out, tmp_path / "absent"])
    assert with_extra != before
    (out / "extra.html").unlink()
    (out / "index.html").write_text("longer")
    assert digests.listing_digest([out, tmp_path / "absent"]) not in (before, with_extra)
    assert digests.content_digest(tmp_path / "absent") == digests.MISSING
    assert digests.content_digest(None) is None


def _path_fields(model: type[BaseModel], prefix: str = "") -> set[str]:
    found = set()
    for name, info in model.model_fields.items():
        args = typing.get_args(info.annotation) or (info.annotation,)
        nested = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        for sub in nested:
            found |= _path_fields(sub, f"{prefix}{name}.")
        if not nested and (name == "database" or re.search(r"(^|_)(file|path|dir|folder)$",
                                                           name)):
            found.add(prefix + name)
    return found


def test_every_settings_field_naming_a_file_or_folder_is_classified():
    assert _path_fields(Settings) == set(steps.PATH_FIELDS)
    assert set(steps.PATH_FIELDS.values()) == {"input", "output", "cache", "database"}


def _step(settings: Settings, key: str, registered: tuple[str, ...] = (), specs=None
          ) -> steps.PlannedStep:
    """The step ``key`` of the settings' pipeline, planned from the project's asset graph."""
    return steps.planned_step(STEP_GRAPH, settings, key, registered, specs)


def _demo(tmp_path: Path, **update) -> Settings:
    """The demo's settings, with its annotation and error-annotation folders copied to tmp."""
    construction = demo_construction()
    annotations = tmp_path / "annotations"
    shutil.copytree(construction.annotation.folder_path(), annotations)
    errors = tmp_path / "errors"
    shutil.copytree(demo_error_analysis().annotations_dir, errors)
    construction.annotation = construction.annotation.model_copy(
        update={"folder": str(annotations)})
    settings = Settings(database=str(tmp_path / "demo.duckdb"), data=DataConfig(kind="built"),
                        metrics=MetricConfig(bleu_tokenize="13a"), construction=construction,
                        error_analysis=demo_error_analysis().model_copy(
                            update={"annotations_dir": str(errors)}))
    return settings.model_copy(update=update)


def _fingerprints(settings: Settings) -> dict[str, str]:
    model = load_models().get("copy-source-baseline")
    planned = [_step(settings, "selection"), _step(settings, "build:hin_Deva_US"),
               _step(settings, "dataset"), _step(settings, "test_sets"),
               _step(settings, f"model:{model.id}"), _step(settings, "results", (model.id,))]
    return {step.key: step.fingerprint({}) for step in planned}


def test_each_input_changes_the_fingerprints_of_the_steps_that_read_it(tmp_path):
    settings = _demo(tmp_path)
    base = _fingerprints(settings)
    assert _fingerprints(settings) == base  # nothing changed: the same fingerprints

    def changed(after: dict[str, str]) -> set[str]:
        return {key for key in base if after[key] != base[key]}

    (annotation,) = Path(settings.construction.annotation.folder).glob("hin_Deva_US-*.json")
    original = annotation.read_bytes()
    annotation.write_bytes(original + b"\n")  # a returned annotation file
    assert changed(_fingerprints(settings)) == {"build:hin_Deva_US"}
    annotation.write_bytes(original)
    assert _fingerprints(settings) == base

    (errors,) = list(Path(settings.error_analysis.annotations_dir).glob("cmn_*.json"))
    original = errors.read_bytes()
    errors.write_bytes(original + b"\n")  # a returned error-annotation file
    assert changed(_fingerprints(settings)) == {"results"}
    errors.write_bytes(original)

    metrics = settings.metrics.model_copy(update={"bootstrap_replicates": 50})
    assert changed(_fingerprints(settings.model_copy(update={"metrics": metrics}))) == {
        "model:copy-source-baseline", "results"}
    metrics = settings.metrics.model_copy(update={"metrics": ["bleu", "chrf", "chrf++", "ter"]})
    assert changed(_fingerprints(settings.model_copy(update={"metrics": metrics}))) == {
        "model:copy-source-baseline", "results"}  # the metrics scored and aggregated
    engine = settings.engine.model_copy(update={"cache_dir": str(tmp_path / "elsewhere")})
    assert changed(_fingerprints(settings.model_copy(update={"engine": engine}))) == set()
    site = settings.site.model_copy(update={"show_originals": False})
    assert changed(_fingerprints(settings.model_copy(update={"site": site}))) == {"results"}

    corrections = tmp_path / "corrections.yaml"
    corrections.write_text("corrections: []\n")
    selection = settings.construction.selection.model_copy(
        update={"corrections_file": str(corrections)})
    construction = settings.construction.model_copy(update={"selection": selection})
    with_file = settings.model_copy(update={"construction": construction})
    assert changed(_fingerprints(with_file)) == {"selection"}
    before = _fingerprints(with_file)
    corrections.write_text("corrections: [{id: 1, remove: [{text: x}]}]\n")
    assert _fingerprints(with_file)["selection"] != before["selection"]


def test_a_model_entry_and_the_data_files_are_inputs(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(demo_dataset_dir(), data)
    settings = _demo(tmp_path, data=DataConfig(kind="local", cultivar_path=str(data)))
    model = load_models().get("copy-source-baseline")
    before = _step(settings, f"model:{model.id}").fingerprint({})
    other = model.model_copy(update={"family": "Another"})
    assert _step(settings, f"model:{model.id}", specs={model.id: other}).fingerprint({}) != before
    assert _step(settings, f"model:{model.id}").fingerprint({"test_sets": "t2"}) != before

    test_sets = _step(settings, "test_sets").fingerprint({})
    (data / "hin_Deva_US.jsonl").write_text(
        (data / "hin_Deva_US.jsonl").read_text("utf-8") + "\n", "utf-8")
    assert _step(settings, "test_sets").fingerprint({}) != test_sets


def test_unpinned_hub_data_and_a_configured_push_always_run(tmp_path, monkeypatch):
    settings = _demo(tmp_path, data=DataConfig(kind="hub"))
    assert "no pinned revision" in _step(settings, "test_sets").always_runs
    pinned = settings.model_copy(update={"data": DataConfig(
        kind="hub", cultivar_revision="abc", flores="hub", flores_revision="def")})
    assert _step(pinned, "test_sets").always_runs is None
    publish = settings.publish.model_copy(update={"repo_id": "me/cultivar"})
    pushing = settings.model_copy(update={"publish": publish})
    assert _step(pushing, "results").always_runs is None  # no token: a dry run
    monkeypatch.setenv("HF_TOKEN", "hf_test_token_value")
    assert "pushes the dataset to me/cultivar" in _step(pushing, "results").always_runs


def test_the_book_reuses_only_an_equal_fingerprint_with_unchanged_outputs(tmp_path):
    settings = _demo(tmp_path)
    store = Store(settings.database_path)
    step = _step(settings, "dataset")
    assert step.outputs == (settings.construction.dataset.folder_path(),)
    with recording_steps():
        book = StepBook(store)
        first = book.decide(step)
        assert not first.reuse and first.reason == "no record of an earlier run"
        step.outputs[0].mkdir(parents=True)
        (step.outputs[0] / "hin_Deva_US.jsonl").write_text("{}\n")
        book.finished(step, first, 0.5)
        # the upstream step has no record: its token is None, as when the record was made
        again = StepBook(store).decide(step)
        assert again.reuse and again.reason.startswith("unchanged since its run of ")
        (step.outputs[0] / "hin_Deva_US.jsonl").write_text("{}\n{}\n")
        edited = StepBook(store).decide(step)
        assert not edited.reuse and "output files changed" in edited.reason
        book.finished(step, edited, 0.5)
        book.records["build:hin_Deva_US"] = new_record("build:hin_Deva_US", "x", "y", 1.0)
        upstream_ran = book.decide(step)  # the step it reads ran again: another fingerprint
        assert not upstream_ran.reuse and upstream_ran.reason.startswith("runs again since its ")
        assert upstream_ran.reason.endswith(": step build:hin_Deva_US ran again (its outputs "
                                            "changed)")


# --- other writers during a run (the database's write generation) ---------------------------

OTHER_WRITER = """
import sys
from cultivar_assets.models import load_models
from cultivar_assets.store.database import (
    Store,
    recording_steps,
    running_step,
    writing_for_steps,
)
from cultivar_assets.store.records import write_reported_results
from cultivar_assets.store.step_records import (
    finish_step_run,
    new_record,
    put_step_record,
    read_step_records,
    start_step_run,
)

store, kind = Store(sys.argv[1]), sys.argv[2]
registry = load_models()
if kind == "run":  # another pipeline run: its own steps' writes and records
    with recording_steps():
        read_step_records(store)
        write_reported_results(store, [registry.get(m) for m in registry])
        put_step_record(store, new_record("results", "other" * 12, "o" * 64, 2.0))
elif kind == "rerun":  # another pipeline run, of other settings, running the step "dataset"
    with recording_steps():
        read_step_records(store)
        put_step_record(store, new_record("dataset", "other" * 12, "o" * 64, 2.0))
else:  # cultivar build, the Dagster UI, a script
    write_reported_results(store, [registry.get(m) for m in registry])
"""


def _other_writer(store: Store, kind: str) -> None:
    """A write to ``store`` by another process: ``run`` (another pipeline run), ``rerun``
    (another pipeline run that runs the step ``dataset``) or ``other``."""
    import subprocess

    subprocess.run([sys.executable, "-c", OTHER_WRITER, str(store.path), kind], check=True,
                   timeout=120, cwd=REPO)


def _recorded_dataset_step(tmp_path: Path) -> tuple[Store, steps.PlannedStep]:
    settings = _demo(tmp_path)
    step = _step(settings, "dataset")
    step.outputs[0].mkdir(parents=True)
    (step.outputs[0] / "hin_Deva_US.jsonl").write_text("{}\n")
    return Store(settings.database_path), step


def test_a_write_by_another_process_between_steps_is_seen_before_reuse(tmp_path):
    store, step = _recorded_dataset_step(tmp_path)
    with recording_steps():
        earlier = StepBook(store)
        earlier.finished(step, earlier.decide(step), 0.5)
    with recording_steps():
        book = StepBook(store)
        assert book.decide(step).reuse  # nothing else wrote: reused
    with recording_steps():
        book = StepBook(store)  # a run that has not decided the step yet
        _other_writer(store, "other")  # e.g. the UI materialised a model meanwhile
        decision = book.decide(step)
    assert not decision.reuse and decision.reason == "no record of an earlier run"
    assert read_step_records(store) == {}


@pytest.mark.parametrize("kind", ["rerun", "other"])
def test_a_step_of_this_run_whose_record_another_writer_replaced_stops_the_run(tmp_path, kind):
    """Issue 37 §3: a run paused after its model step while another run of other settings
    replaced that step's outputs must not go on and show the other run's results."""
    store, step = _recorded_dataset_step(tmp_path)
    later = _step(_demo(tmp_path / "later"), "test_sets")
    with recording_steps():
        book = StepBook(store)
        book.finished(step, book.decide(step), 0.5)  # this run's step
        _other_writer(store, kind)  # replaces (rerun) or forgets (other) its record
        with pytest.raises(ConcurrentWriteError, match=r"forgot or replaced the record of "
                                                       r"dataset, which this run had run"):
            book.decide(later)


def test_another_pipeline_runs_records_are_read_again_before_the_next_decision(tmp_path):
    store, step = _recorded_dataset_step(tmp_path)
    with recording_steps():
        book = StepBook(store)
        book.finished(step, book.decide(step), 0.5)
        # another run, started after this run's last write: it read the file as this run left
        # it, so its writes keep the records (each of its steps forgets its own before it runs)
        _other_writer(store, "run")
        assert book.decide(step).reuse
        assert set(book.records) == {"dataset", "results"}  # what the file holds now
        assert book.records["results"].inputs == "other" * 12
        _reported(store)  # this run's next write: the other run wrote since its last look
        assert set(read_step_records(store)) == {"dataset", "results"}  # it had looked again


def test_a_step_during_which_another_process_wrote_records_nothing(tmp_path):
    store, step = _recorded_dataset_step(tmp_path)
    with recording_steps():
        book = StepBook(store)
        _reported(store)  # the run's own earlier writes
        decision = book.decide(step)
        book.starting(step)
        _reported(store)  # the step writes ...
        _other_writer(store, "run")  # ... another run writes (and records) meanwhile ...
        assert book.finished(step, decision, 0.5) is None  # ... so it records nothing
        assert read_step_records(store) == {}  # not even the other run's records

        decision = book.decide(step)  # the next step: nothing else wrote since
        book.starting(step)
        _other_writer(store, "other")  # written after the step's last write, before its record
        assert book.finished(step, decision, 0.5) is None
        assert read_step_records(store) == {}
        decision = book.decide(step)
        book.starting(step)
        assert book.finished(step, decision, 0.5) is not None  # uninterrupted: recorded
    assert set(read_step_records(store)) == {step.key}


def test_a_changed_input_is_named_with_its_old_and_new_value(tmp_path):
    settings = _demo(tmp_path)
    store = Store(settings.database_path)
    step = _step(settings, "build:hin_Deva_US")
    with recording_steps():
        book = StepBook(store)
        book.finished(step, book.decide(step), 0.5)
    (annotation,) = Path(settings.construction.annotation.folder).glob("hin_Deva_US-*.json")
    annotation.write_bytes(annotation.read_bytes() + b"\n")
    localisation = settings.construction.localisation.model_copy(
        update={"max_new_tokens": 64})
    construction = settings.construction.model_copy(update={"localisation": localisation})
    changed = _step(settings.model_copy(update={"construction": construction}),
                    "build:hin_Deva_US")
    reason = StepBook(store).decide(changed).reason
    assert reason.startswith("runs again since its run of ")
    assert reason.endswith(f" UTC: annotation file {annotation.name} changed; setting "
                           "construction.localisation.max_new_tokens changed (128 → 64)")


def test_each_changed_input_kind_has_its_words_and_long_lists_are_cut():
    old = {"code:": "a", "file:annotation file x.json": "d1", "setting:metrics.bleu_tokenize":
           "13a", "step:build:ita_Latn": "t1", "entry:family": "A", "other:review folder": "/a"}
    new = {"code:": "b", "file:annotation file x.json": "d2", "setting:metrics.bleu_tokenize":
           "flores200", "step:build:ita_Latn": "t2", "entry:family": "B",
           "other:review folder": "/b", "file:annotation file y.json": "d3"}
    assert changes.changed_inputs(old, new) == [
        "the package's code changed", "annotation file x.json changed",
        "annotation file y.json is new", "setting metrics.bleu_tokenize changed (13a → flores200)",
        "registry entry field family changed (A → B)", "review folder changed (/a → /b)",
        "step build:ita_Latn ran again (its outputs changed)"]
    assert changes.change_summary(changes.changed_inputs(old, new)).endswith("; and 3 more")
    assert changes.changed_inputs(old, old) == []
    assert changes.changed_inputs({"step:test_sets": "t"}, {"step:test_sets": None}) == [
        "step test_sets has no record (it has not finished since)"]
    long = {"setting:models": ["m" * 30, "n" * 30]}
    (said,) = changes.changed_inputs({"setting:models": []}, long)
    assert said.endswith("…)") and len(said) < 120


def test_one_locales_annotation_file_is_an_input_of_its_build_step_only(tmp_path):
    settings = _demo(tmp_path)
    locales = ["hin_Deva_US", "spa_Latn_Spain"]
    before = {locale: _step(settings, f"build:{locale}").fingerprint({}) for locale in locales}
    (annotation,) = Path(settings.construction.annotation.folder).glob("spa_Latn_Spain-*.json")
    annotation.write_bytes(annotation.read_bytes() + b"\n")
    after = {locale: _step(settings, f"build:{locale}").fingerprint({}) for locale in locales}
    assert after["hin_Deva_US"] == before["hin_Deva_US"]
    assert after["spa_Latn_Spain"] != before["spa_Latn_Spain"]
    extra = Path(settings.construction.annotation.folder) / "notes.txt"  # no locale's file
    extra.write_text("x")
    assert _step(settings, "build:hin_Deva_US").fingerprint({}) == before["hin_Deva_US"]


def test_a_record_of_an_older_release_is_read_and_gets_the_general_reason(tmp_path):
    settings = _demo(tmp_path)
    path = settings.database_path
    step = _step(settings, "dataset")
    with duckdb.connect(str(path)) as con:  # the table as the previous release created it
        con.execute("CREATE SCHEMA raw; CREATE TABLE raw.step_records (step VARCHAR PRIMARY "
                    "KEY, inputs VARCHAR NOT NULL, outputs VARCHAR NOT NULL, token VARCHAR NOT "
                    "NULL, seconds DOUBLE NOT NULL, recorded_at TIMESTAMP NOT NULL)")
        con.execute("INSERT INTO raw.step_records VALUES ('dataset', 'old', 'o', 't', 1.0, "
                    "TIMESTAMP '2026-01-02 03:04:05')")
    store = Store(path)
    with recording_steps():
        for _ in range(2):  # as the file is, then after a write applied this release's schema
            (record,) = read_step_records(store).values()
            assert record.input_values is None and record.inputs == "old"
            _reported(store)
        assert StepBook(store).decide(step).reason == (
            "runs again: its inputs, or a step whose outputs it reads, changed since its run "
            "of 2026-01-02 03:04:05 UTC")


# --- writes made for steps of Dagster runs launched outside the runner ------------------------

def _records(store: Store, *keys: str) -> None:
    with recording_steps():
        read_step_records(store)
        for key in keys:
            put_step_record(store, new_record(key, f"in-{key}", "o", 1.0))


def test_a_write_for_a_step_forgets_that_steps_record_only(tmp_path):
    store = Store(tmp_path / "r.duckdb")
    _records(store, "selection", "model:a", "results")
    with writing_for_steps(["model:a"], "run-1"):
        _reported(store)
    assert set(read_step_records(store)) == {"selection", "results"}
    _reported(store)  # a write for no step: every record
    assert read_step_records(store) == {}


def test_a_launched_run_records_a_step_whose_every_asset_it_did_with_the_same_inputs(tmp_path):
    store = Store(tmp_path / "r.duckdb")
    assets = ("translations", "scores")

    def start(run: str, asset: str, inputs: str = "f") -> None:
        with writing_for_steps(["model:a"], run):
            start_step_run(store, "model:a", run, asset, inputs)

    def finish(run: str, asset: str, inputs: str = "f") -> bool:
        with writing_for_steps(["model:a"], run):
            return finish_step_run(store, new_record("model:a", inputs, "o", 0.0, {"x": 1},
                                                     run), asset, assets)

    start("r1", "translations")
    assert not finish("r1", "translations")  # scores not done yet
    start("r1", "scores")
    assert finish("r1", "scores")
    record = read_step_records(store)["model:a"]
    assert (record.inputs, record.run_id, record.input_values) == ("f", "r1", {"x": 1})
    assert store.query("read_step_runs_of", step="model:a") == []  # its notes are gone

    start("r2", "scores")  # only part of the step: no record, and the old one is forgotten
    assert not finish("r2", "scores")
    assert "model:a" not in read_step_records(store)

    start("r3", "translations", "f")
    start("r3", "scores", "g")  # the inputs changed between the assets
    assert not finish("r3", "translations", "g") and not finish("r3", "scores", "g")

    start("r4", "translations")
    start("r5", "translations")  # another run of the same step: r4's notes go
    start("r4", "scores")
    assert not finish("r4", "translations") and not finish("r4", "scores")

    start("r6", "translations")
    with recording_steps():  # a runner's step of the same key writes: r6's notes go
        read_step_records(store)
        running_step("model:a")
        _reported(store)
        running_step(None)
    start("r6", "scores")
    assert not finish("r6", "translations") and not finish("r6", "scores")
    assert "model:a" not in read_step_records(store)


OTHER_LAUNCHED_RUN = """
import sys
from cultivar_assets.models import load_models
from cultivar_assets.store.database import Store, writing_for_steps
from cultivar_assets.store.records import write_reported_results

registry = load_models()
with writing_for_steps(["results"], "ui-run"):  # a Dagster run launched from the UI
    write_reported_results(Store(sys.argv[1]), [registry.get(m) for m in registry])
"""


def test_a_launched_runs_write_during_a_runners_step_is_seen(tmp_path):
    import subprocess

    store, step = _recorded_dataset_step(tmp_path)
    with recording_steps():
        book = StepBook(store)
        decision = book.decide(step)
        book.starting(step)
        _reported(store)
        subprocess.run([sys.executable, "-c", OTHER_LAUNCHED_RUN, str(store.path)], check=True,
                       timeout=120, cwd=REPO)
        assert book.finished(step, decision, 0.5) is None
    assert read_step_records(store) == {}


def test_the_error_annotation_folder_is_read_only_for_its_errors_files(tmp_path):
    """The results step's inputs digest the ``*.errors.json`` files of ``annotations_dir``
    alone (``annotations_dir: /etc`` hashed every file there): another file is neither read
    nor counted; a returned file still counts."""
    settings = _demo(tmp_path)
    before = _step(settings, "results").fingerprint({})
    folder = Path(settings.error_analysis.annotations_dir)
    (folder / "notes.txt").write_text("not an error-annotation file")
    assert _step(settings, "results").fingerprint({}) == before
    (returned,) = folder.glob("cmn_*.errors.json")
    returned.write_bytes(returned.read_bytes() + b"\n")
    assert _step(settings, "results").fingerprint({}) != before


# The groups and labels of each step's inputs as the hand-written plan (steps/plan.py before the
# steps were derived from the asset graph) gave them for these settings: stored records name
# changed inputs by these labels, so the derived plan keeps them.
HAND_WRITTEN_LABELS = {
    "selection": (["construction.selection", "construction.source", "database"],
                  ["corrections file", "selection file", "source benchmark files"],
                  ["review folder"], False),
    "build:hin_Deva_US": (["construction.annotation", "construction.localisation", "database"],
                          ["annotation file {}", "prompts file",
                           "the localiser's recorded answers"],
                          ["annotation folder", "tool pages folder"], False),
    "dataset": (["construction.dataset", "construction.localisation", "database"], [],
                ["dataset folder"], False),
    "test_sets": (["data", "database"], ["Cultivar data files", "FLORES files"], [], False),
    "model:copy-source-baseline": (["database", "engine", "metrics", "models_file"],
                                   ["SentencePiece model of spBLEU"], [], True),
    "results": (["database", "engine", "error_analysis", "metrics", "models", "publish", "site",
                 "storage"],  # model_results reads the storage root
                ["error-annotation files", "model registry file"],
                ["models registered in the Dagster instance", "output folders",
                 "whether the site gets its Query page"], False),
}


def test_the_derived_steps_inputs_have_the_hand_written_plans_groups_and_labels(tmp_path):
    settings = _demo(tmp_path)
    (annotation,) = Path(settings.construction.annotation.folder).glob("hin_Deva_US-*.json")
    for key, (sections, files, other, entry) in HAND_WRITTEN_LABELS.items():
        inputs = _step(settings, key, ("copy-source-baseline",)).inputs
        assert sorted(inputs) == sorted(["code", "environment", "settings", "files", "other",
                                         *(["entry"] if entry else [])]), key
        assert sorted(inputs["settings"]) == sections, key
        assert sorted(inputs["files"]) == [f.format(annotation.name) for f in files], key
        assert sorted(inputs["other"]) == other, key
