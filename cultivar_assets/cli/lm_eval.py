"""``cultivar export lm-eval DIR`` and ``cultivar import lm-eval SAMPLES_DIR OUT``.

- export: the benchmark (the configured data, or ``--dataset``: a published dataset folder or a
  Hub dataset id) as lm-evaluation-harness tasks (:mod:`cultivar_assets.publish.lm_eval_tasks`),
  in the prompt style ``--prompt-style`` and with the settings' sacreBLEU settings; ``DIR`` is
  replaced whole when complete (``files.replace_folder``).
- import: the samples that ``lm_eval --log_samples --output_path SAMPLES_DIR`` wrote become a
  submission in ``OUT`` (``manifest.yaml``: ``--manifest`` with ``outputs`` set and ``produced``
  completed from the run; ``outputs.jsonl``; :mod:`cultivar_assets.engines.lm_eval_samples`),
  checked as ``cultivar score`` checks one (on any problem every problem is listed, the exit
  status is 1 and nothing is written); with ``--score``, then scored (``cultivar score OUT``)
  when it covers the configured benchmark's test sets, else it stays written, unscored, and the
  exit status is 1 with the coverage problems (a run with ``lm_eval --limit``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from cultivar_assets.cli.common import _console, _settings, print_error


def _data_config(settings, dataset: str | None):
    """The data the export reads: the settings', or ``dataset`` (a folder: ``local``; else a
    Hub dataset id: ``hub``), its originals from its own columns."""
    if dataset is None:
        return settings.data
    kind = "local" if Path(dataset).exists() else "hub"
    update = {"kind": kind, "flores": "dataset", "locales": None}
    update["cultivar_path" if kind == "local" else "cultivar_repo"] = dataset
    return settings.data.model_copy(update=update)


def _refused(command: str, error: Exception) -> int:
    """Say why ``cultivar <command> lm-eval`` wrote nothing; exit status 1."""
    print_error(f"cultivar {command} lm-eval: {error}\nNothing was written.")
    return 1


def cmd_export_lm_eval(args: argparse.Namespace) -> int:
    from cultivar_assets.data.sources import load_benchmark
    from cultivar_assets.data.testsets import DataError
    from cultivar_assets.engines.prompts import get_prompt_style
    from cultivar_assets.files import UnsafeOutputError, replace_folder
    from cultivar_assets.publish.lm_eval_tasks import (
        TASK_FOLDER,
        LmEvalExportError,
        LmEvalTasks,
        write_lm_eval_tasks,
    )
    from cultivar_assets.registry import UnknownEntryError

    settings = _settings(args)
    try:
        style = get_prompt_style(args.prompt_style)
        benchmark = load_benchmark(_data_config(settings, args.dataset))
        names: list[str] = []

        def write(work: Path) -> None:
            names.extend(write_lm_eval_tasks(work, benchmark.test_sets(), LmEvalTasks(
                style, settings.metrics, settings.engine.max_new_tokens)))

        replace_folder(Path(args.dir), write, {"kind": "lm_eval_tasks",
                                               "fingerprint": benchmark.fingerprint()})
    except (DataError, LmEvalExportError, UnknownEntryError, UnsafeOutputError) as error:
        return _refused("export", error)
    console = _console()
    console.print(f"{len(names)} lm-eval tasks (group cultivar, prompt style {style.name}) in "
                  f"{Path(args.dir) / TASK_FOLDER}, from {benchmark.source}", markup=False)
    if benchmark.missing:
        console.print(f"Not in the data, not exported: {len(benchmark.missing)} test set(s) ("
                      + ", ".join(item.test_set for item in benchmark.missing) + ")",
                      markup=False)
    console.print(f"Run: lm_eval --model hf --model_args pretrained=MODEL --include_path "
                  f"{args.dir} --tasks cultivar --log_samples --output_path RESULTS", markup=False)
    return 0


def cmd_import_lm_eval(args: argparse.Namespace) -> int:
    from cultivar_assets.config_files import ConfigFileError, read_yaml_file
    from cultivar_assets.data.sources import load_benchmark
    from cultivar_assets.engines.lm_eval_samples import (
        read_lm_eval_samples,
        submission_manifest,
    )
    from cultivar_assets.engines.submission import (
        DEFAULT_OUTPUTS,
        MANIFEST_NAMES,
        SubmissionError,
        read_submission,
    )
    from cultivar_assets.files import UnsafeOutputError, replace_folder

    settings = _settings(args)
    try:
        manifest = read_yaml_file(args.manifest, "manifest")
        samples = read_lm_eval_samples(args.samples_dir, args.filter)
        if not isinstance(manifest, dict):
            raise SubmissionError([f"{args.manifest}: expected a mapping of the manifest's "
                                   "fields"])
        document = submission_manifest(manifest, samples, DEFAULT_OUTPUTS)

        def write(work: Path) -> None:
            (work / MANIFEST_NAMES[0]).write_text(
                yaml.safe_dump(document, allow_unicode=True, sort_keys=False), encoding="utf-8")
            (work / DEFAULT_OUTPUTS).write_text(samples.outputs_text(), encoding="utf-8")
            read_submission(work)  # checked before it replaces anything

        replace_folder(Path(args.out), write, {"kind": "lm_eval_submission"})
    except (SubmissionError, ConfigFileError, UnsafeOutputError) as error:
        return _refused("import", error)
    console = _console()
    console.print(f"Submission {document['id']}: {len(samples.lines)} hypotheses from "
                  f"{len(samples.files)} lm-eval task(s), in {args.out}", markup=False)
    if samples.ignored:
        console.print(f"Not Cultivar's, left alone: {', '.join(samples.ignored)}", markup=False)
    if not args.score:
        console.print(f"Score it: cultivar score {args.out}", markup=False)
        return 0
    try:
        read_submission(args.out, load_benchmark(settings.data).test_sets())
    except SubmissionError as error:
        print_error(f"cultivar import lm-eval: {args.out} is written but not scored: its test "
                    f"sets are not the configured benchmark's (a run with lm_eval --limit lacks "
                    f"ids); {error}")
        return 1
    from cultivar_assets.cli.score import cmd_score

    return cmd_score(argparse.Namespace(**{**vars(args), "submission": args.out}))


def add_lm_eval_parsers(sub: argparse._SubParsersAction) -> None:
    """``export lm-eval`` and ``import lm-eval``."""
    from cultivar_assets.publish.lm_eval_tasks import DEFAULT_PROMPT_STYLE

    export = sub.add_parser("export", help="write the benchmark in another harness's format")
    export_sub = export.add_subparsers(dest="export_command", required=True)
    tasks = export_sub.add_parser("lm-eval", help="lm-evaluation-harness task YAML (group "
                                  "cultivar; docs/evaluating-models.md)")
    tasks.add_argument("dir", help="folder to write (replaced whole; lm_eval --include_path)")
    tasks.add_argument("--dataset", help="a published dataset folder or a Hub dataset id "
                       "(default: the settings' data)")
    tasks.add_argument("--prompt-style", default=DEFAULT_PROMPT_STYLE,
                       help=f"prompt style of the tasks (default {DEFAULT_PROMPT_STYLE})")
    tasks.add_argument("--bleu-tokenize", help="BLEU tokenizer of the tasks' metric (default: "
                       "the settings')")
    tasks.set_defaults(func=cmd_export_lm_eval)

    imports = sub.add_parser("import", help="make a submission of another harness's outputs")
    import_sub = imports.add_subparsers(dest="import_command", required=True)
    samples = import_sub.add_parser("lm-eval", help="lm_eval --log_samples output as a "
                                    "submission (docs/evaluating-models.md)")
    samples.add_argument("samples_dir", help="lm_eval's --output_path (searched for "
                         "samples_cultivar_*.jsonl)")
    samples.add_argument("out", help="the submission folder to write (replaced whole)")
    samples.add_argument("--manifest", required=True, help="the submission's manifest (id, type, "
                         "family, params_total_b, license; produced is completed from the run)")
    samples.add_argument("--filter", help="lm-eval filter whose responses to take (default: "
                         "the only one)")
    samples.add_argument("--score", action="store_true", help="then score it (cultivar score)")
    samples.add_argument("--database", help="DuckDB file to write (with --score)")
    samples.set_defaults(func=cmd_import_lm_eval)
