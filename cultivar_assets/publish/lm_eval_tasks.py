"""Cultivar as lm-evaluation-harness tasks (lm-eval 0.4.13's task YAML; ours).

:func:`write_lm_eval_tasks` writes, into a folder that ``lm_eval --include_path`` reads:
``cultivar/_cultivar.yaml`` (the group ``cultivar``); ``cultivar/<task>.yaml``, one task per test
set (``cultivar_<locale>``: the localised source, reference the localised English;
``cultivar_flores_<language>``: the original source, reference the original English);
``cultivar/docs/<task>.json``, the task's documents as JSON Lines (``test_set``, ``id``,
``source``, ``reference``, ``language``; ``.json`` so the dataset reader, which takes every
``*.jsonl`` of a dataset folder, never reads them); and ``cultivar/utils.py``
(:mod:`cultivar_assets.publish.lm_eval_utils` with ``SETTINGS`` the ``metrics`` settings given).
Each task is ``generate_until`` with zero shots: ``doc_to_text`` is the prompt style's prompt as a
Jinja2 template of ``source`` (:func:`doc_to_text`), which lm-eval renders to the text the
project's engines receive (``PromptStyle.request``); ``until`` the style's stop strings, greedy,
at most ``max_gen_toks`` (``engine.max_new_tokens``) tokens; a chat style's user turn is the text
(``--apply_chat_template``). The metrics ``cultivar_bleu`` and ``cultivar_chrf`` are the corpus
scores with the project's sacreBLEU settings; ``metadata`` records the prompt style, its template
hash and both signatures.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from cultivar_assets.data.testsets import TestSet
from cultivar_assets.engines.lm_eval_samples import GROUP, task_name
from cultivar_assets.engines.prompts import PromptError, PromptStyle
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.registry import PAPER_METRICS
from cultivar_assets.metrics.sacrebleu_metrics import MetricUnavailableError

TASK_FOLDER = "cultivar"  # under the folder given to write_lm_eval_tasks
HUB_FOLDER = "lm_eval_tasks"  # in the published dataset folder
DEFAULT_PROMPT_STYLE = "base-fewshot"  # the demo's Gemma 3 270M (base model) style
_SOURCE = "\x00source\x00"  # stands for the source while the style's template is rendered
_JINJA_MARKS = ("{{", "}}", "{%", "%}", "{#", "#}")


@dataclass(frozen=True)
class LmEvalTasks:
    """How the tasks are written: the prompt style, the sacreBLEU settings, the most new
    tokens per generation."""

    style: PromptStyle
    metrics: MetricConfig
    max_gen_toks: int


class LmEvalExportError(ValueError):
    """The tasks cannot be written as asked (e.g. a prompt style lm-eval cannot express)."""


@dataclass(frozen=True)
class Function:
    """A YAML ``!function module.name`` value (lm-eval resolves it next to the YAML file)."""

    name: str


class _Dumper(yaml.SafeDumper):
    pass


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    """Prompts of several lines as literal blocks (as written in the styles); other strings as
    PyYAML writes them (a lone newline double-quoted)."""
    if "\n" in value.strip("\n"):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    if value and not value.strip():
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    return dumper.represent_str(value)


_Dumper.add_representer(str, _text)
_Dumper.add_representer(Function, lambda dumper, value: dumper.represent_scalar(
    "!function", value.name, style=""))


def doc_to_text(style: PromptStyle, language: str) -> str:
    """The style's prompt for a source in ``language`` as a Jinja2 template of ``source``: the
    style rendered with a placeholder for the source, which becomes ``{{ source }}``. Text
    of the style that Jinja2 would read as markup is an error (never silently altered)."""
    if style.kind == "source":
        return "{{ source }}"
    request = style.request(_SOURCE, language, 1)
    if style.kind == "plain":
        text = request.prompt or ""
    else:
        messages = request.messages or ()
        if len(messages) != 1 or messages[0][0] != "user":
            raise LmEvalExportError(f"prompt style {style.name!r}: lm-eval takes one user turn "
                                    f"(with --apply_chat_template), not {len(messages)} "
                                    "message(s)")
        text = messages[0][1]
    if text.count(_SOURCE) != 1:
        raise LmEvalExportError(f"prompt style {style.name!r}: the prompt shows the source "
                                f"{text.count(_SOURCE)} times, not once")
    if any(mark in text for mark in _JINJA_MARKS):
        raise LmEvalExportError(f"prompt style {style.name!r}: its text holds Jinja2 markup "
                                "({{, {% or {#), which lm-eval would render")
    return text.replace(_SOURCE, "{{ source }}")


def signatures(metrics: MetricConfig) -> dict[str, str]:
    """The BLEU and chrF signatures of ``metrics`` as the project stores them (BLEU's left out
    when its SentencePiece model is not here: the tasks still score where it is)."""
    from cultivar_assets.metrics.configured import build_metric

    found = {}
    for name in PAPER_METRICS:
        try:
            found[f"{name}_signature"] = build_metric(name, metrics).signature
        except MetricUnavailableError:
            continue
    return found


def utils_source(metrics: MetricConfig) -> str:
    """The text of ``utils.py``: :mod:`~cultivar_assets.publish.lm_eval_utils` with its
    ``SETTINGS`` line set to ``metrics``."""
    text = resources.files("cultivar_assets.publish").joinpath("lm_eval_utils.py").read_text(
        encoding="utf-8")
    settings = {"bleu_tokenize": metrics.bleu_tokenize, "lowercase": metrics.lowercase,
                "chrf_word_order": metrics.chrf_word_order,
                "spm_model_path": metrics.spm_model_path}
    start = text.index("SETTINGS = {")
    end = text.index("}\n", start) + 2
    return text[:start] + f"SETTINGS = {settings!r}\n" + text[end:]


def task_config(test_set: TestSet, style: PromptStyle, max_gen_toks: int,
                signature: dict[str, str]) -> dict[str, Any]:
    """The task YAML of one test set (as a mapping; ``Function`` for ``!function`` values)."""
    name = task_name(test_set)
    try:
        text = doc_to_text(style, test_set.language)
    except PromptError as error:
        raise LmEvalExportError(f"{name}: {error}") from None
    metadata = {"version": 1.0, "test_set": test_set.name, "prompt_style": style.name,
                "prompt_template_sha256": style.template_hash, **signature}
    if style.kind == "chat":
        metadata["apply_chat_template"] = True
    return {
        "task": name,
        "custom_dataset": Function("utils.load_docs"),
        "dataset_kwargs": {"docs": f"docs/{name}.json"},
        "test_split": "test",
        "output_type": "generate_until",
        "num_fewshot": 0,
        "doc_to_text": text,
        "doc_to_target": "reference",
        "generation_kwargs": {"until": list(style.definition.get("stop", [])),
                              "do_sample": False, "max_gen_toks": max_gen_toks},
        "metric_list": [
            {"metric": Function("utils.cultivar_bleu"),
             "aggregation": Function("utils.corpus_bleu"), "higher_is_better": True},
            {"metric": Function("utils.cultivar_chrf"),
             "aggregation": Function("utils.corpus_chrf"), "higher_is_better": True},
        ],
        "metadata": metadata,
    }


def documents(test_set: TestSet) -> list[dict[str, Any]]:
    """The task's documents: one per segment, in the test set's order."""
    return [{"test_set": test_set.name, "id": segment.segment_id, "source": segment.source,
             "reference": segment.reference, "language": test_set.language}
            for segment in test_set.segments]


def dump_yaml(document: dict[str, Any]) -> str:
    return yaml.dump(document, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=100)


def write_lm_eval_tasks(folder: Path, test_sets: list[TestSet], tasks: LmEvalTasks) -> list[str]:
    """Write the task folder (module docstring) under ``folder``; the task names, in the test
    sets' order. ``folder`` is written into, not replaced (callers swap whole folders)."""
    if not test_sets:
        raise LmEvalExportError("the benchmark has no test sets to export")
    style, metrics = tasks.style, tasks.metrics
    signature = signatures(metrics)
    root = Path(folder) / TASK_FOLDER
    (root / "docs").mkdir(parents=True, exist_ok=True)
    names = []
    for test_set in test_sets:
        config = task_config(test_set, style, tasks.max_gen_toks, signature)
        name = config["task"]
        (root / f"{name}.yaml").write_text(dump_yaml(config), encoding="utf-8")
        (root / "docs" / f"{name}.json").write_text(
            "".join(json.dumps(doc, ensure_ascii=False) + "\n" for doc in documents(test_set)),
            encoding="utf-8")
        names.append(name)
    group = {"group": GROUP, "task": names, "metadata": {"version": 1.0}}
    (root / f"_{GROUP}.yaml").write_text(dump_yaml(group), encoding="utf-8")
    (root / "utils.py").write_text(utils_source(metrics), encoding="utf-8")
    return names
