"""A finished ``cultivar run`` of the copy baseline, made once a session and copied into each
test that starts from it (the fixtures ``copy_baseline_run`` and ``copy_baseline_home`` of
``tests/conftest.py``). Under pytest-xdist the first worker that needs it makes it, under a file
lock in the session's folder shared by the workers; the others read it there
(:func:`shared_copy_baseline_run`).

The run's settings (:func:`write_config`) name the database and the models file (neither is part
of a settings section's data version) and no output folder: the site, the charts, the models'
site parts, the dataset folder and the error analysis go to their defaults under
``CULTIVAR_HOME``. Its data is a local copy of the demo data in a folder of the session, the
same path in every copy (with one file, ``deu_Latn_Austria.jsonl``, that names no known locale:
the run records a data note about it). So every settings section, file and registry entry that
the source assets observe is the same in a copy, and Dagster reports every asset of a copy
fresh: a test that starts from a copy runs only what it changes.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
import yaml

CONFIG = "cultivar.yaml"
BOOTSTRAP_REPLICATES = 50


@dataclass(frozen=True)
class FinishedRun:
    """A folder holding a finished run: ``cultivar.yaml``, ``models.yaml``, the database
    ``results.duckdb`` with its storage root, ``home`` (its CULTIVAR_HOME) and ``dagster`` (its
    DAGSTER_HOME). ``printed``: what the original ``cultivar run`` printed (stdout, then
    stderr); ``result``: its :class:`~cultivar_assets.runner.PipelineResult`."""

    folder: Path
    data: Path  # the session's copy of the demo data, read by every copy
    printed: str = field(repr=False)
    result: object = field(repr=False)

    @property
    def config(self) -> Path:
        return self.folder / CONFIG

    @property
    def database(self) -> Path:
        return self.folder / "results.duckdb"

    @property
    def models_file(self) -> Path:
        return self.folder / "models.yaml"

    @property
    def home(self) -> Path:
        return self.folder / "home"

    @property
    def dagster_home(self) -> Path:
        return self.folder / "dagster"

    def settings(self):
        from cultivar_assets.settings import load_settings

        return load_settings(self.config)

    def config_values(self) -> dict:
        return yaml.safe_load(self.config.read_text("utf-8"))

    def write_config(self, values: dict) -> Path:
        self.config.write_text(yaml.safe_dump(values, sort_keys=False), "utf-8")
        return self.config

    def enter(self, monkeypatch: pytest.MonkeyPatch) -> FinishedRun:
        """Make this folder's homes the process's CULTIVAR_HOME and DAGSTER_HOME."""
        monkeypatch.setenv("CULTIVAR_HOME", str(self.home))
        monkeypatch.setenv("DAGSTER_HOME", str(self.dagster_home))
        return self

    def copy(self, folder: Path) -> FinishedRun:
        """This run copied to ``folder`` (files with their modification times), its settings
        naming the copy's database and models file."""
        shutil.copytree(self.folder, folder, symlinks=True)
        copied = replace(self, folder=folder)
        write_config(copied)
        return copied


def copy_baseline_models(path: Path) -> Path:
    from conftest import COPY_ENTRY, write_models_file

    return write_models_file(path, [COPY_ENTRY])


def write_config(run: FinishedRun) -> Path:
    """The run's settings (module docstring): the copy baseline on the local data, BLEU 13a,
    :data:`BOOTSTRAP_REPLICATES` replicates, no Query page."""
    return run.write_config({
        "database": str(run.database), "models_file": str(run.models_file),
        "models": ["copy-source-baseline"],
        "data": {"kind": "local", "cultivar_path": str(run.data)},
        "metrics": {"bleu_tokenize": "13a", "bootstrap_replicates": BOOTSTRAP_REPLICATES},
        "site": {"query_page": "off"}})


def finished_copy_baseline_run(folder: Path) -> FinishedRun:
    """``cultivar run`` of :func:`write_config`'s settings in ``folder/run`` (module docstring),
    with the data in ``folder/data``; the console 1,000 columns wide. Raises AssertionError with
    what it printed when the run fails."""
    from conftest import isolate_home

    import cultivar_assets.runner as runner
    from cultivar_assets.cli import main
    from cultivar_assets.data.sources import demo_dataset_dir

    data = folder / "data"
    shutil.copytree(demo_dataset_dir(), data)
    shutil.copy(data / "deu_Latn_Germany.jsonl", data / "deu_Latn_Austria.jsonl")
    run = FinishedRun(folder / "run", data, printed="", result=None)
    run.folder.mkdir()
    copy_baseline_models(run.models_file)
    write_config(run)
    results = []

    def recorded(*args, **kwargs):
        results.append(pipeline(*args, **kwargs))
        return results[-1]

    pipeline = runner.run_pipeline
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate_home(monkeypatch, run.home)
        run.enter(monkeypatch)
        monkeypatch.setenv("COLUMNS", "1000")  # lines as printed, however long the paths are
        monkeypatch.setattr(runner, "run_pipeline", recorded)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["--config", str(run.config), "run"])
    printed = out.getvalue() + err.getvalue()
    assert code == 0 and len(results) == 1, printed
    return replace(run, printed=printed, result=results[0])


def shared_copy_baseline_run(tmp_path_factory: pytest.TempPathFactory) -> FinishedRun:
    """:func:`finished_copy_baseline_run`, made once for the whole session: in the session's
    base folder (the folder of every pytest-xdist worker's base folder, under pytest-xdist),
    under a file lock; whoever comes later reads the record it left (``copy_baseline_run.
    pickle``). A run that failed leaves no record: the next worker tries again in a folder of
    its own."""
    from filelock import FileLock

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # pytest-<n>, shared by the session's workers
    record = root / "copy_baseline_run.pickle"
    with FileLock(str(root / "copy_baseline_run.lock")):
        if record.is_file():
            return pickle.loads(record.read_bytes())
        run = finished_copy_baseline_run(Path(tempfile.mkdtemp(prefix="copy_baseline_run-",
                                                               dir=root)))
        partial = record.with_name(f"{record.name}.{os.getpid()}.tmp")
        partial.write_bytes(pickle.dumps(run))
        os.replace(partial, record)
        return run


@contextlib.contextmanager
def one_torch_thread():
    """torch's intra-op thread pool at one thread inside the block, its size before restored
    after it: a tiny model's matrices gain nothing from a second thread, whose waiting costs
    CPU time (and under pytest-xdist each worker has one core of its own)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
