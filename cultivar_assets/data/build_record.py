"""What the published texts say about how the loaded data was made, from the build's record.

The built dataset's manifest (``.cultivar-build.json``, written by
:mod:`cultivar_assets.construction.dataset`) holds ``source_benchmark`` (the source benchmark's
identity) and ``provenance``: the selection, the localiser and the annotation of that build,
copied from the stored records when the dataset was built. :func:`method_sections` turns that
record into :class:`Section` objects of plain facts; the dataset card
(:mod:`cultivar_assets.publish.card`) renders them as Markdown and the site's dataset page
(:mod:`cultivar_assets.site.build`) as HTML, so the two cannot disagree. A fact the record does
not hold is written "not recorded"; nothing else is stated. The paper's description of its own
method is a separate set of sections (:func:`paper_method_sections`), shown only for the paper's
dataset (data kinds ``local`` and ``hub``: Cultivar files) and always cited as the paper's.

:func:`check_originals_source` compares an originals source configured for the evaluation with
the build's own source benchmark (paper §2 builds from FLORES dev; a build may use devtest or a
parallel file): a source that is not the build's is refused with one message naming both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cultivar_assets.data.testsets import DataError

PAPER_CITATION = "Chen et al., 2026"
PAPER_URL = "https://arxiv.org/abs/2608.09766"
NOT_RECORDED = "not recorded"
REPLAY = "recorded answers played back"

Part = tuple[str, bool]  # (text, shown as code)


@dataclass(frozen=True)
class Fact:
    """One statement: a label and its value, in parts that are plain text or code."""

    label: str
    parts: tuple[Part, ...]

    @property
    def text(self) -> str:
        return "".join(text for text, _ in self.parts)


@dataclass(frozen=True)
class Section:
    """A titled group of facts, with an optional lead sentence (plain text)."""

    title: str
    facts: tuple[Fact, ...]
    lead: str | None = None


def _fact(label: str, *parts: str | Part | None) -> Fact:
    """``parts``: plain strings, or ``(text, True)`` for code; None is "not recorded"."""
    out: list[Part] = []
    for part in parts:
        if part is None:
            out.append((NOT_RECORDED, False))
        elif isinstance(part, tuple):
            out.append(part if part[0] not in (None, "") else (NOT_RECORDED, False))
        else:
            out.append((part, False))
    return Fact(label, tuple(out))


def _code(value: object) -> Part | None:
    return None if value is None or value == "" else (str(value), True)


def _listing(values: Sequence[object]) -> list[str | Part]:
    parts: list[str | Part] = []
    for i, value in enumerate(values):
        if i:
            parts.append(", ")
        parts.append((str(value), True))
    return parts


# --- the build's record -----------------------------------------------------------------------


def _where(path: object, public: bool) -> str:
    """A recorded path; ``public``: its last part only (published texts name no local
    folders; the manifest keeps the whole path)."""
    if not path:
        return "?"
    return str(path).rstrip("/").rsplit("/", 1)[-1] if public else str(path)


def source_description(source: Mapping[str, Any] | None, public: bool = False) -> str:
    """The source benchmark in words (kind, split, where), for messages and (``public``) the
    card and the site."""
    if not source or not source.get("kind"):
        return "a source benchmark whose identity is not recorded"
    kind = source["kind"]
    if kind == "demo":
        return "the original side of the bundled demo data (written for this project)"
    if kind == "files":
        return (f"the parallel file {_where(source.get('path'), public)} (sha256 "
                f"{str(source.get('file_sha256') or '?')[:12]})")
    split = source.get("split") or "?"
    if source.get("origin") == "hub":
        commit = f", commit {source['commit']}" if source.get("commit") else ""
        return (f"FLORES {split} from the Hub ({source.get('repo') or '?'}@"
                f"{source.get('revision') or 'main'}{commit})")
    return f"FLORES {split} in {_where(source.get('path'), public)}"


def _source_section(source: Mapping[str, Any] | None) -> Section:
    source = source or {}
    kind = source.get("kind")
    facts = [_fact("Kind", _code(kind))]
    if kind == "flores":
        facts.append(_fact("Split", _code(source.get("split"))))
        if source.get("origin") == "hub":
            facts += [_fact("Repository", _code(source.get("repo"))),
                      _fact("Revision", _code(source.get("revision"))),
                      _fact("Commit", _code(source.get("commit")))]
        else:
            facts.append(_fact("Files (folder name)", _code(_where(source.get("path"), True)
                                                            if source.get("path") else None)))
    elif kind == "files":
        facts += [_fact("File (name)", _code(_where(source.get("path"), True)
                                             if source.get("path") else None)),
                  _fact("File sha256", _code(source.get("file_sha256")))]
    facts.append(_fact("Fingerprint of the sentences read (sha256)",
                       _code(source.get("fingerprint"))))
    return Section("Source benchmark", tuple(facts), source_description(source, True) + ".")


def _selection_section(selection: Mapping[str, Any] | None) -> Section:
    if not selection:
        return Section("Selection", (_fact("Selection", None),))
    counts = selection.get("counts") or {}
    rules = selection.get("rules") or []
    rule_parts: list[str | Part] = []
    for i, rule in enumerate(rules):
        rule_parts += ([", "] if i else []) + [(str(rule["rule"]), True),
                                               f" excluded {rule['excluded']}"]
    labels = selection.get("counted_labels")
    facts = [
        _fact("Named-entity recognition", "spaCy ", _code(selection.get("spacy_version")),
              ", pipeline ", _code(selection.get("pipeline")), " ",
              _code(selection.get("pipeline_version"))),
        _fact("Counted labels", *(_listing(labels) if labels else [None])),
        _fact("Entities required", str(selection["min_entities"])
              if selection.get("min_entities") is not None else None),
        _fact("Sentences read; with an entity; with enough entities",
              str(counts.get("instances", NOT_RECORDED)), "; ",
              str(counts.get("with_entities", NOT_RECORDED)), "; ",
              str(counts.get("with_enough_entities", NOT_RECORDED))),
        _fact("Exclusion rules (instances with enough entities each excluded)",
              *(rule_parts or ["none applied"])),
        _fact("Corrections file", *(["none"] if not selection.get("corrections_file") else [
            _code(_where(selection["corrections_file"], True)), " (sha256 ",
            _code(str(selection.get("corrections_sha256") or "")[:12]), ")"])),
        _fact("Selection file", *(["none"] if not selection.get("selection_file") else [
            _code(_where(selection["selection_file"], True)), " (sha256 ",
            _code(str(selection.get("selection_sha256") or "")[:12]), ")"])),
        _fact("Candidates; selected", str(counts.get("candidates", NOT_RECORDED)), "; ",
              str(counts.get("selected", NOT_RECORDED))),
        _fact("Run", _code(selection.get("created_at"))),
    ]
    return Section("Selection", tuple(facts))


def _localiser_parts(run: Mapping[str, Any]) -> list[str | Part]:
    parts: list[str | Part] = ["engine ", _code(run.get("engine")), ", model ",
                               _code(run.get("model"))]
    if run.get("model_revision"):
        parts += [" at revision ", _code(run["model_revision"])]
    if run.get("engine") == "replay":
        recorded = run.get("recorded_from")
        parts += [f" ({REPLAY}"]
        if recorded:
            parts += ["; recorded with engine ", _code(recorded.get("engine")), ", model ",
                      _code(recorded.get("model"))]
            if recorded.get("revision"):
                parts += [" at revision ", _code(recorded["revision"])]
        else:
            parts += ["; what recorded them is not recorded"]
        parts += [")"]
    return parts


def _localisation_section(runs: Mapping[str, Mapping[str, Any]] | None) -> Section:
    if not runs:
        return Section("Localisation", (_fact("Localiser", None),))
    groups: dict[str, list[str]] = {}
    for locale, run in runs.items():
        key = json.dumps({k: v for k, v in run.items()
                          if k not in ("created_at", "task_id", "n_drafts", "n_flagged")},
                         sort_keys=True, default=str)
        groups.setdefault(key, []).append(locale)
    facts: list[Fact] = []
    for locales in groups.values():
        run = runs[locales[0]]
        scope = "" if len(groups) == 1 else f" ({', '.join(locales)})"
        dates = sorted(str(runs[k].get("created_at") or NOT_RECORDED) for k in locales)
        options = run.get("engine_options")
        facts += [
            _fact(f"Localiser{scope}", *_localiser_parts(run)),
            _fact(f"Prompt template{scope}", _code(run.get("prompt_name")), " (sha256 ",
                  _code(str(run.get("prompt_hash") or "")[:12]), ")"),
            _fact(f"Decoding{scope}", "engine options ",
                  _code(json.dumps(options, sort_keys=True) if options is not None else None),
                  ", max_new_tokens ", _code(run.get("max_new_tokens")), ", max_attempts ",
                  _code(run.get("max_attempts"))),
            _fact(f"Drafts written{scope}", *_listing(dict.fromkeys(dates))),
        ]
    flagged = sum(int(r.get("n_flagged") or 0) for r in runs.values())
    drafts = sum(int(r.get("n_drafts") or 0) for r in runs.values())
    facts.append(_fact("Drafts; flagged (answers that could not be read)", str(drafts), "; ",
                       str(flagged)))
    return Section("Localisation", tuple(facts))


def is_demo_annotation(entry: Mapping[str, Any]) -> bool:
    """An annotation file of the demo's shipped set: the record's ``demo_file`` (its annotator
    label is the demo's, ``construction.annotation.demo.DEMO_ANNOTATOR``)."""
    return entry.get("demo_file") is True


def _annotation_section(files: Mapping[str, Mapping[str, Any]] | None) -> Section:
    if not files:
        return Section("Post-editing", (_fact("Annotation files", None),))
    facts: list[Fact] = []
    for locale, entry in files.items():
        actions = entry.get("actions") or {}
        facts.append(_fact(
            locale, "task ", _code(entry.get("task_id")), ", annotator label ",
            _code(entry.get("annotator")), ", tool ", _code(entry.get("tool_version")),
            f"; {actions.get('kept', 0)} kept, {actions.get('edited', 0)} edited, "
            f"{actions.get('reverted', 0)} reverted; saved ", _code(entry.get("saved_at")),
            ", ingested ", _code(entry.get("ingested_at"))))
    lead = None
    if all(is_demo_annotation(e) for e in files.values()):
        lead = ("These are the demo's shipped annotation files: their final pairs are the bundled "
                "demo data, written by the toolkit's authors, recorded against the demo "
                "localiser's drafts; no post-editing session took place.")
    return Section("Post-editing", tuple(facts), lead)


def build_sections(provenance: Mapping[str, Any] | None) -> list[Section]:
    """The facts of a build (data kind ``built``), from its manifest's provenance record."""
    if not provenance:
        return [Section("How this build was made", (_fact(
            "Record", "the build's manifest holds no provenance record (built before it was "
            "recorded); build the dataset again"),))]
    dataset = provenance.get("dataset") or {}
    counts = dataset.get("n_instances") or {}
    n_parts: list[str | Part] = []
    for i, (locale, n) in enumerate(counts.items()):
        n_parts += ([", "] if i else []) + [(str(locale), True), f" {n}"]
    sections = [
        _source_section(provenance.get("source_benchmark")),
        _selection_section(provenance.get("selection")),
        _localisation_section(provenance.get("localisation")),
        _annotation_section(provenance.get("annotation")),
        Section("Dataset", (
            _fact("Instances per locale", *(n_parts or [None])),
            _fact("Built", _code(dataset.get("built_at"))),
            _fact("Fingerprint (sha256 of the built rows)", _code(dataset.get("fingerprint"))),
        )),
    ]
    return sections


def table1_scope(provenance: Mapping[str, Any] | None) -> str:
    """What the computed Table 1 measures, from the record of the files it was computed from."""
    files = (provenance or {}).get("annotation") or {}
    if files and all(is_demo_annotation(e) for e in files.values()):
        return ("Computed by the Cultivar toolkit from the demo's shipped annotation files, not "
                "figures of the paper and not a post-editing session: their final pairs are the "
                "bundled demo data written by the toolkit's authors, so the table measures how "
                "far the demo localiser's drafts are from those pairs.")
    labels = sorted({str(e.get("annotator")) for e in files.values() if e.get("annotator")})
    who = (f" (annotator labels as the files give them: {', '.join(labels)})" if labels else "")
    return ("Computed by the Cultivar toolkit from the annotation files of this build"
            f"{who}, not figures of the paper: what was done with each locale's LLM drafts.")


def public_source(dataset: Mapping[str, Any]) -> str:
    """Where the loaded data came from, as the published pages say it (a row of the ``dataset``
    query): no folder of the machine that loaded or built it. ``built``: the build's own source
    benchmark (:func:`source_description`, public), its build time and fingerprint; ``local``:
    the folder's last part; the demo's and a Hub dataset's stored description as it is."""
    kind, stored = dataset.get("kind"), str(dataset.get("source") or "–")
    if kind == "built":
        raw = dataset.get("build_provenance")
        provenance = (json.loads(raw) if isinstance(raw, str) else raw) or {}
        what = ("demo data" if dataset.get("is_demo") else
                source_description(provenance.get("source_benchmark"), public=True))
        built = (provenance.get("dataset") or {}).get("built_at") or NOT_RECORDED
        return (f"Cultivar built by this project (from {what}; built {built}, fingerprint "
                f"{str(dataset.get('fingerprint') or '?')[:12]})")
    if kind == "local":
        prefix = "Cultivar files in "
        folder = stored[len(prefix):] if stored.startswith(prefix) else stored
        return f"Cultivar files (folder {_where(folder, True)})"
    if kind in ("demo", "hub"):
        return stored
    return "data whose kind is not recorded (loaded before it was)"


# --- the paper's own method (only for the paper's dataset) -------------------------------------


def paper_method_sections() -> list[Section]:
    """The paper's description of how Cultivar was made: the paper's claims, cited (§2)."""
    cite = f"{PAPER_CITATION}, §2"
    return [Section(f"As the paper describes it ({cite})", (
        _fact("Selection (§2.1)", "named entities in the English FLORES dev set were found with "
              "spaCy and corrected by hand; the paper reports 658 sentences (about 65% of the "
              "dev set) with at least one, from which 200 with at least two were chosen, leaving "
              "out sentences dominated by numerals or on topics such as medicine and science"),
        _fact("LLM localisation (§2.2)", "the paper reports that GPT-5.5 (",
              ("gpt-5.5-2026-0423", True), ") rewrote each original FLORES source and English "
              "pair for the location"),
        _fact("Human post-editing (§2.3)", "the paper reports that for each locale one annotator "
              "proficient in the source language and in English, who lives or has lived in the "
              "location, reviewed every pair and kept, post-edited or (sparingly) reverted it"),
    ), "The paper's statements about its own dataset, not records of this toolkit.")]


def method_lead(kind: str | None, is_demo: bool) -> str | None:
    """The sentence that says where the facts of "How the data was made" come from."""
    if kind == "built":
        return ("What this build did, as its own records hold it (the dataset's manifest "
                ".cultivar-build.json, made from the stored selection, localisation and "
                "annotation records); a value marked \"not recorded\" is not in them, and "
                "nothing else is stated.")
    if kind in ("local", "hub") and not is_demo:
        return (f"This data is read as the paper's Cultivar dataset; how it was made is the "
                f"paper's account ({PAPER_CITATION}, §2, {PAPER_URL}), not a record of this "
                "toolkit.")
    return None


def method_sections(kind: str | None, is_demo: bool,
                    provenance: Mapping[str, Any] | None) -> list[Section]:
    """The "how the data was made" sections for loaded data of ``kind``."""
    if kind == "built":
        return build_sections(provenance)
    if kind in ("local", "hub") and not is_demo:
        return paper_method_sections()
    if kind == "demo" or is_demo:
        return [Section("How the data was made", (_fact(
            "Demo data", "written by hand for the toolkit, in the style of FLORES; it was not "
            "made with the building pipeline (cultivar demo builds it with the pipeline: data "
            "kind built)"),))]
    return [Section("How the data was made", (_fact(
        "Record", "the data kind it was loaded as is not recorded (loaded before it was); "
        "materialise test_sets again"),))]


# --- the originals of a build -------------------------------------------------------------------


def check_originals_source(built: Mapping[str, Any] | None, configured: Mapping[str, Any],
                           folder: object) -> None:
    """Refuse an originals source (``configured``: kind flores, split, origin, path or repo and
    revision) that is not the build's source benchmark ``built`` (from its manifest)."""
    if not built or not built.get("kind"):
        return  # not recorded: the originals themselves are compared (load_benchmark)
    same = (built.get("kind") == configured.get("kind")
            and built.get("split") == configured.get("split"))
    if same and built.get("origin") == "hub" and configured.get("origin") == "hub":
        same = built.get("revision") == configured.get("revision")
    if not same:
        raise DataError(
            f"the built dataset in {folder} was made from {source_description(built)}, but the "
            f"configured originals are {source_description(configured)}: its instances would be "
            "paired with other sentences of the same ids. Leave flores at its default "
            "('dataset': the build's own originals) or configure that same source")
