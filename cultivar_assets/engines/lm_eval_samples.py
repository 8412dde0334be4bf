"""lm-evaluation-harness samples as a submission (ours).

``lm_eval --log_samples --output_path DIR`` writes, per model, ``DIR/<model>/results_<date>.json``
and one ``samples_<task>_<date>.jsonl`` per task: one JSON object per document, with the
document (``doc``), the generations (``resps``), the filtered generations (``filtered_resps``)
and the filter's name (``filter``; ``none`` by default). For the tasks of ``cultivar export
lm-eval`` (``cultivar_<locale>``, ``cultivar_flores_<language>``: :func:`task_name`) each
document holds its test set and instance id, and the hypothesis is ``filtered_resps[0]``, taken as
lm-eval logged it (no cleaning rule, no stripping: a submission is scored as submitted).

:func:`read_lm_eval_samples` turns every such file in a folder or in the folders directly inside
it (:func:`samples_files`) into the lines of a submission's outputs file
(:mod:`cultivar_assets.engines.submission`) and checks them as
:func:`~cultivar_assets.engines.submission.parse_outputs` checks a submitted file, each problem
naming the samples file and its line; :func:`submission_manifest` completes a manifest's
``produced`` from the run's ``results_<date>.json``. Neither writes anything.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cultivar_assets.config_files import MAX_CONFIG_BYTES, ConfigFileError, read_input_file
from cultivar_assets.data.locales import locale_registry, source_languages
from cultivar_assets.data.testsets import TestSet
from cultivar_assets.engines.submission import SubmissionError, parse_outputs

GROUP = "cultivar"
SAMPLES_FILE = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}"
                          r"(?:\.\d+)?)\.jsonl$")
MAX_SAMPLES_BYTES = 1024 * 1024 * 1024  # a samples file also holds every prompt
SYSTEM = "lm-evaluation-harness"


def task_name(test_set: TestSet) -> str:
    """``cultivar_<locale>`` for a Cultivar test set, ``cultivar_flores_<language>`` for the
    FLORES test set ``flores_<language>``."""
    return test_set.name if test_set.kind == "cultivar" else f"{GROUP}_{test_set.name}"


def task_test_set(task: str) -> str | None:
    """The name of the test set of a task that :func:`task_name` names (None: the task is no
    Cultivar locale's or language's)."""
    if task.startswith(f"{GROUP}_flores_"):
        language = task[len(GROUP) + len("_flores_"):]
        return f"flores_{language}" if language in source_languages() else None
    if task.startswith(f"{GROUP}_") and task[len(GROUP) + 1:] in locale_registry():
        return task
    return None


@dataclass
class LmEvalSamples:
    """The outputs read from lm-eval's samples: one line per hypothesis (``test_set``, ``id``,
    ``hypothesis``, sorted), the samples files read (by task), the dates of their runs and the
    tasks left alone (not Cultivar's)."""

    lines: list[dict[str, Any]]
    files: dict[str, Path]
    dates: set[str] = field(default_factory=set)
    ignored: list[str] = field(default_factory=list)

    def outputs_text(self) -> str:
        return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in self.lines)


def samples_files(folder: Path) -> list[Path]:
    """Every ``samples_<task>_<date>.jsonl`` in ``folder`` or in a folder directly inside it
    (where lm-eval writes them: ``DIR/<model>/``; no deeper folder is listed), sorted."""
    folder = Path(folder)
    found = [*folder.glob("samples_*.jsonl"), *folder.glob("*/samples_*.jsonl")]
    return sorted(path for path in found if SAMPLES_FILE.match(path.name))


def _converted(path: Path, test_set: str, filter_name: str | None
               ) -> tuple[list[bytes], list[str]]:
    """The outputs lines of one samples file, line for line (b"" where a line gives none), and
    the problems that only lm-eval's fields can have."""
    where = str(path)
    try:
        raw_lines = read_input_file(path, "samples file", MAX_SAMPLES_BYTES).split(b"\n")
    except ConfigFileError as error:
        return [], [str(error)]
    rows: list[tuple[int, dict[str, Any] | None]] = []
    problems: list[str] = []
    for number, raw in enumerate(raw_lines, 1):
        if not raw.strip():
            rows.append((number, None))
            continue
        try:
            row = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            problems.append(f"{where}:{number}: not a JSON object of lm-eval's samples "
                            f"({error})")
            row = None
        if row is not None and not isinstance(row, dict):
            problems.append(f"{where}:{number}: not a JSON object of lm-eval's samples")
            row = None
        rows.append((number, row))
    filters = sorted({str(row.get("filter")) for _, row in rows if row is not None})
    if filter_name is None and len(filters) > 1:
        return [], [*problems, f"{where}: samples of the filters {', '.join(filters)}: "
                    "choose one (--filter)"]
    converted: list[bytes] = []
    for number, row in rows:
        if row is None or (filter_name is not None and str(row.get("filter")) != filter_name):
            converted.append(b"")
            continue
        at = f"{where}:{number}"
        doc = row.get("doc")
        if not isinstance(doc, dict) or "id" not in doc:
            problems.append(f"{at}: doc has no id (not a document of cultivar export lm-eval's "
                            "tasks)")
            converted.append(b"")
            continue
        if doc.get("test_set", test_set) != test_set:
            problems.append(f"{at}: the document is of the test set {doc.get('test_set')!r}, "
                            f"not {test_set!r} (the file's task)")
        responses = row.get("filtered_resps")
        if not isinstance(responses, list) or len(responses) != 1:
            problems.append(f"{at}: filtered_resps must hold one generation (lm-eval's "
                            "--log_samples, repeats 1)")
            converted.append(b"")
            continue
        line = {"test_set": test_set, "id": doc["id"], "hypothesis": responses[0]}
        converted.append(json.dumps(line, ensure_ascii=False).encode("utf-8"))
    if filter_name is not None and filter_name not in filters:
        problems.append(f"{where}: no samples of the filter {filter_name!r} (it has "
                        f"{', '.join(filters) or 'none'})")
    return converted, problems


def read_lm_eval_samples(folder: str | Path, filter_name: str | None = None) -> LmEvalSamples:
    """The outputs in the samples files under ``folder`` (module docstring), checked: every
    problem at once in one :class:`~cultivar_assets.engines.submission.SubmissionError`."""
    folder = Path(folder)
    if not folder.is_dir():
        raise SubmissionError([f"{folder}: no such folder (lm_eval's --output_path)"])
    problems: list[str] = []
    files: dict[str, Path] = {}
    hypotheses: dict[tuple[str, int], str] = {}
    ignored: list[str] = []
    dates: set[str] = set()
    for path in samples_files(folder):
        match = SAMPLES_FILE.match(path.name)
        task = match["task"]
        test_set = task_test_set(task)
        if test_set is None:
            if task.startswith(f"{GROUP}_"):
                problems.append(f"{path}: the task {task!r} is no Cultivar test set's "
                                "(cultivar_<locale> or cultivar_flores_<language>)")
            else:
                ignored.append(task)
            continue
        if task in files:
            problems.append(f"{path}: a second samples file of {task} (the first: "
                            f"{files[task]}); keep one run's files")
            continue
        files[task] = path
        dates.add(match["date"])
        converted, found = _converted(path, test_set, filter_name)
        problems += found
        read, _, found = parse_outputs(converted, str(path))
        problems += found
        hypotheses.update(read)
    if not files and not problems:
        problems.append(f"{folder}: no samples of Cultivar's tasks (samples_cultivar_*.jsonl; "
                        "run lm_eval with --log_samples)")
    if problems:
        raise SubmissionError(problems)
    lines = [{"test_set": name, "id": segment_id, "hypothesis": hypotheses[(name, segment_id)]}
             for name, segment_id in sorted(hypotheses)]
    return LmEvalSamples(lines, files, dates, sorted(set(ignored)))


def _results(samples: LmEvalSamples) -> list[dict[str, Any]]:
    """The ``results_<date>.json`` files beside the samples files: one that is not there is
    not used (lm_eval may not have written it); one that is there but cannot be read, is not
    JSON or not a JSON object is an error naming it (SubmissionError), never passed over."""
    found, problems = [], []
    for path in sorted({p.parent / f"results_{d}.json" for p in samples.files.values()
                        for d in samples.dates}):
        if not os.path.lexists(path):
            continue
        try:
            document = json.loads(read_input_file(path, "results file", MAX_CONFIG_BYTES))
        except ConfigFileError as error:
            problems.append(str(error))
            continue
        except ValueError as error:  # not UTF-8 or not JSON
            problems.append(f"{path}: not a JSON results file ({error})")
            continue
        if not isinstance(document, dict):
            problems.append(f"{path}: not a JSON object (lm_eval's results file is one)")
            continue
        found.append(document)
    if problems:
        raise SubmissionError(problems)
    return found


def produced_by(samples: LmEvalSamples) -> dict[str, str]:
    """``produced`` as the run states it: system lm-evaluation-harness, its version
    (``lm_eval_version`` of the results files), the prompt style the tasks name
    (``metadata.prompt_style``) and the run's date (of the samples files' names); a field that
    the files do not state, or state more than once differently, is left out."""
    results = _results(samples)
    versions = {str(r.get("lm_eval_version")) for r in results if r.get("lm_eval_version")}
    styles = {str(config.get("metadata", {}).get("prompt_style"))
              for r in results for task, config in (r.get("configs") or {}).items()
              if task in samples.files and isinstance(config, dict)
              and config.get("metadata", {}).get("prompt_style")}
    days = {date[:10] for date in samples.dates}
    produced = {"system": SYSTEM}
    for key, values in (("version", versions), ("prompt", styles), ("date", days)):
        if len(values) == 1:
            produced[key] = values.pop()
    return produced


def submission_manifest(manifest: dict[str, Any], samples: LmEvalSamples,
                        outputs: str) -> dict[str, Any]:
    """The submission's manifest: ``manifest`` with ``outputs`` set and the ``produced`` fields
    it does not give taken from the run (:func:`produced_by`)."""
    document = dict(manifest)
    given = document.get("produced")
    if given is None or isinstance(given, dict):
        document["produced"] = {**produced_by(samples), **(given or {})}
    document["outputs"] = outputs
    return document

