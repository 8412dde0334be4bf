"""``cultivar score SUBMISSION``: outputs produced elsewhere, scored here.

The submission (a folder or its manifest; :mod:`cultivar_assets.engines.submission`) is read and
checked against the configured benchmark's test sets first, and the database path (a directory
is refused): on any problem, every problem is listed, the exit status is 1 and nothing is
written. Then its registry entry (``engine:
outputs``, ``path:``) is added to the settings' ``models_file`` (when the file has no entry of
that id; without a ``models_file``, to ``$CULTIVAR_HOME/submitted-models.yaml``, a copy of the
bundled registry) and the normal pipeline (``cultivar run``) scores that model.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from cultivar_assets.cli.common import _settings, print_error


def _registered(settings, submission) -> str | None:
    """Register the submission's entry; the problem (None: none) when its id is taken."""
    from cultivar_assets.models import add_model_entry, default_models_file, load_models
    from cultivar_assets.paths import cultivar_home

    if settings.models_file:
        registry_file = Path(settings.models_file)
    else:
        registry_file = cultivar_home() / "submitted-models.yaml"
    registry = load_models(registry_file if registry_file.exists() else None)
    model_id = submission.model_id
    if model_id in registry:
        spec = registry.get(model_id)
        if spec.engine != "outputs" or Path(spec.path or "").resolve() != (
                submission.manifest_path.resolve()):
            return (f"{registry.where}: the id {model_id!r} is already the registry's entry of "
                    f"another model (engine {spec.engine}, path {spec.path}); give the "
                    "submission another id")
        entry = submission.registry_entry()
        differ = [key for key in ("type", "family", "params_total_b", "params_active_b",
                                  "license") if getattr(spec, key) != entry.get(key)]
        if differ:
            return (f"{registry.where}: the entry {model_id!r} differs from the submission's "
                    f"manifest in {', '.join(differ)}; edit the entry (or remove it, and "
                    "cultivar score adds it again)")
    else:
        if not registry_file.exists():
            registry_file.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(default_models_file(), registry_file)
        entry = submission.registry_entry()
        entry["path"] = str(submission.manifest_path.resolve())
        add_model_entry(registry_file, entry)
    settings.models_file = str(registry_file)
    return None


def cmd_score(args: argparse.Namespace) -> int:
    from cultivar_assets.cli.pipeline_run import run_and_report
    from cultivar_assets.data.sources import load_benchmark
    from cultivar_assets.engines.submission import SubmissionError, read_submission

    settings = _settings(args)
    try:
        submission = read_submission(args.submission, load_benchmark(settings.data).test_sets())
    except SubmissionError as error:
        print_error(f"cultivar score: {error}\nNothing was written.")
        return 1
    from cultivar_assets.store.database import Store

    Store(settings.database_path)  # a path that cannot be the database fails before registering
    problem = _registered(settings, submission)
    if problem:
        print_error(f"cultivar score: {problem}\nNothing was written.")
        return 1
    settings.models = [submission.model_id]
    return run_and_report(settings)


def add_score_parser(sub) -> None:
    score = sub.add_parser("score", help="score a submission: outputs produced elsewhere "
                           "(docs/evaluating-models.md, Submitting outputs)")
    score.add_argument("submission", help="the submission's folder or its manifest")
    score.add_argument("--database", help="DuckDB file to write")
    score.set_defaults(func=cmd_score)
