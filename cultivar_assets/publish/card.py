"""The dataset card: YAML front matter and a Markdown body, kept apart.

:func:`build_card` returns a :class:`Card` (:func:`card_for_store`: the card of the stored dataset,
as ``hf_dataset_folder`` writes it); ``card.body`` is the Markdown that the static site renders,
``card.front_matter`` the metadata, ``card.to_readme()`` the Hub's ``README.md``. The front
matter is written with ``yaml.safe_dump``; every text value interpolated into the Markdown is
escaped (:func:`md_text`, :func:`md_code`), so a ``|`` or ``<`` in a name cannot break a table
or inject HTML.
:func:`merge_front_matter` combines our front matter with that of a card already on the Hub.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

from cultivar_assets.data import build_record
from cultivar_assets.data.build_record import (
    Section,
    method_lead,
    method_sections,
    table1_scope,
)
from cultivar_assets.publish.config import REPO_ID, PublishConfig
from cultivar_assets.publish.records import DatasetInfo, read_publish_data
from cultivar_assets.store.database import Store
from cultivar_assets.tables import format_value, md_code, md_table, md_text

LICENSE = "cc-by-sa-4.0"
LICENSE_URL = "https://creativecommons.org/licenses/by-sa/4.0/"
PAPER_URL = build_record.PAPER_URL
SPLIT = "test"
CITATION = build_record.PAPER_CITATION

CULTIVAR_BIBTEX = r"""@misc{chen2026cultivar,
  title         = {Cultivar: A Contrastive and Locale-Oriented Translation Benchmark for
                   Investigating Contamination and Localisation Robustness},
  author        = {Chen, Pinzhen and Dutta Chowdhury, Koel and Xu, Xiaoya and Tan, David and
                   Osmelak, Doreen and de Gibert, Ona and Tumurchuluun, Ariun-Erdene and
                   Urlana, Ashok and Sizov, Fedor and Sirin, Hale and Alabi, Jesujoba O. and
                   Abed, Karrar Talib and Klimaszewski, Mateusz and Bogoychev, Nikolay and
                   Bafna, Niyati and Schmidtov{\'a}, Patr{\'\i}cia and
                   Shanbhag, Preksha Manjunath and Shen, Sherrie and Zouhar, Vil{\'e}m and
                   Iyer, Vivek and Hamidullah, Yasser and Al Ghussin, Yusser and Zhao, Zheng},
  year          = {2026},
  eprint        = {2608.09766},
  archivePrefix = {arXiv},
  primaryClass  = {cs.CL},
  url           = {https://arxiv.org/abs/2608.09766}
}"""

FLORES_BIBTEX = r"""@article{nllb2022,
  title   = {No Language Left Behind: Scaling Human-Centered Machine Translation},
  author  = {{NLLB Team} and Costa-juss{\`a}, Marta R. and Cross, James and
             {\c{C}}elebi, Onur and Elbayad, Maha and Heafield, Kenneth and Heffernan, Kevin and
             Kalbassi, Elahe and Lam, Janice and Licht, Daniel and Maillard, Jean and Sun, Anna and
             Wang, Skyler and Wenzek, Guillaume and Youngblood, Al and Akula, Bapi and
             Barrault, Loic and Mejia Gonzalez, Gabriel and Hansanti, Prangthip and
             Hoffman, John and Jarrett, Semarley and Sadagopan, Kaushik Ram and Rowe, Dirk and
             Spruit, Shannon and Tran, Chau and Andrews, Pierre and Ayan, Necip Fazil and
             Bhosale, Shruti and Edunov, Sergey and Fan, Angela and Gao, Cynthia and
             Goswami, Vedanuj and Guzm{\'a}n, Francisco and Koehn, Philipp and
             Mourachko, Alexandre and Ropers, Christophe and Saleem, Safiyyah and
             Schwenk, Holger and Wang, Jeff},
  journal = {arXiv preprint arXiv:2207.04672},
  year    = {2022}
}

@article{goyal2022flores,
  title   = {The {FLORES}-101 Evaluation Benchmark for Low-Resource and Multilingual Machine
             Translation},
  author  = {Goyal, Naman and Gao, Cynthia and Chaudhary, Vishrav and Chen, Peng-Jen and
             Wenzek, Guillaume and Ju, Da and Krishnan, Sanjana and Ranzato, Marc'Aurelio and
             Guzm{\'a}n, Francisco and Fan, Angela},
  journal = {Transactions of the Association for Computational Linguistics},
  volume  = {10},
  pages   = {522--538},
  year    = {2022},
  doi     = {10.1162/tacl_a_00474}
}"""

TABLE1_COLUMNS = (
    ("locale", "Locale"),
    ("kept_llm_paraphrase", "Kept LLM paraphrase"),
    ("reverted_to_flores", "Reverted to FLORES"),
    ("edited_source_only", "Edited: source only"),
    ("edited_target_only", "Edited: English only"),
    ("edited_both", "Edited: both"),
    ("avg_edits_source", "Avg. edits, source"),
    ("avg_edits_english", "Avg. edits, English"),
)

_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)",
                           re.DOTALL | re.MULTILINE)


class CardError(ValueError):
    """A dataset card cannot be read or merged."""


@dataclass(frozen=True)
class Card:
    """A dataset card: the front matter (a YAML mapping) and the Markdown body."""

    front_matter: dict[str, Any]
    body: str
    # the body without what the site's dataset page shows itself (its title, how the data was
    # made, both Table 1 sections), so that the page holds each once
    page_body: str = field(default="", compare=False)

    def front_matter_yaml(self) -> str:
        return yaml.safe_dump(self.front_matter, sort_keys=False, allow_unicode=True, width=100)

    def to_readme(self) -> str:
        return f"---\n{self.front_matter_yaml()}---\n\n{self.body.rstrip()}\n"


def size_category(n_rows: int) -> str:
    """The Hub's ``size_categories`` label for ``n_rows`` rows."""
    bounds = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
              (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M")]
    return next((label for bound, label in bounds if n_rows < bound), "10M<n<100M")


def reported_table1() -> dict[str, dict[str, str]]:
    """The paper's Table 1 (annotation statistics) by locale, as shipped in ``data/reported``."""
    text = resources.files("cultivar_assets.data").joinpath(
        "reported", "table1_annotation.csv").read_text("utf-8")
    return {row["locale"]: row for row in csv.DictReader(io.StringIO(text))}


def config_entry(locale: str, default: bool = False) -> dict[str, Any]:
    """The card's ``configs`` entry of ``locale``; ``default``: the configuration that
    ``datasets.load_dataset(folder)`` loads when given no configuration name."""
    entry: dict[str, Any] = {"config_name": locale, "data_files": [
        {"split": SPLIT, "path": f"data/{locale}/{SPLIT}.parquet"}]}
    if default:
        entry["default"] = True
    return entry


def build_card(
    locales: Sequence[dict[str, Any]],
    *,
    is_demo: bool,
    include_originals: bool,
    pretty_name: str | None = None,
    repo_id: str | None = None,
    annotation_summary: Sequence[dict[str, Any]] | None = None,
    provenance: bool = False,
    kind: str | None = None,
    build_provenance: dict[str, Any] | None = None,
) -> Card:
    """The card for ``locales`` (rows of the ``publish_locales`` query, with ``n_instances``).

    ``annotation_summary``: rows of the ``annotation_summary`` view (Table 1 computed from the
    returned annotation files); when given, shown in their own section, before and apart from
    the paper's reported Table 1. ``provenance``: the data files carry the provenance columns of
    the project's own build (``action``, ``draft_hash``, ``prompt_hash``). ``kind``: the data
    kind the data was loaded as; ``build_provenance``: for ``built``, its build's record. "How
    the data was made" comes from :func:`cultivar_assets.data.build_record.method_sections`
    (the build's facts for ``built``; the paper's own description, cited, only for the paper's
    dataset), the same facts the site's dataset page shows.
    """
    if not locales:
        raise CardError("a dataset card needs at least one locale")
    name = pretty_name or ("Cultivar toolkit demo data" if is_demo else "Cultivar")
    n_rows = sum(int(row["n_instances"]) for row in locales)
    front_matter = {
        "license": LICENSE,
        "language": sorted({str(row["language"]) for row in locales} | {"en"}),
        "task_categories": ["translation"],
        "pretty_name": name,
        "size_categories": [size_category(n_rows)],
        "configs": [config_entry(str(row["locale"]), default=i == 0)
                    for i, row in enumerate(locales)],
    }
    sections = [
        ("title", f"# {md_text(name)}"),
        ("notice", _demo_notice() if is_demo else None),
        ("overview", _overview()),
        ("data", _data_section(locales, is_demo, include_originals, repo_id, provenance,
                               _origin(is_demo, kind, build_provenance))),
        ("locales", _locales_section(locales)),
        ("method", _method_section(kind, is_demo, build_provenance)),
        ("table1", _computed_annotation_section(annotation_summary or [], build_provenance)),
        ("table1", _annotation_section([str(row["locale"]) for row in locales], is_demo,
                                       kind == "built")),
        ("licence", _licence_section(is_demo, include_originals)),
        ("citation", _citation_section()),
    ]
    body = "\n\n".join(text for _, text in sections if text) + "\n"
    page = "\n\n".join(text for key, text in sections
                        if text and key not in ("title", "locales", "method", "table1")) + "\n"
    return Card(front_matter, body, page)


def card_for(
    locales: Sequence[dict[str, Any]], info: DatasetInfo, config: PublishConfig,
    annotation_summary: Sequence[dict[str, Any]] | None = None,
    provenance: bool = False,
) -> Card:
    """The card of a dataset as ``config`` publishes it."""
    return build_card(locales, is_demo=info.is_demo,
                      include_originals=config.originals_included(info.is_demo),
                      pretty_name=config.pretty_name, repo_id=config.repo_id,
                      annotation_summary=annotation_summary, provenance=provenance,
                      kind=info.kind, build_provenance=info.build_provenance)


def card_for_store(store: Store, config: PublishConfig | None = None) -> Card:
    """The card of the stored dataset, as ``hf_dataset_folder`` writes it (e.g. for the site):
    with Table 1 as computed from the annotation files when the data is the project's build."""
    data = read_publish_data(store)
    provenance = any(data.locale_provenance(locale) is not None for locale in data.instances)
    return card_for(data.locales, data.info, config or PublishConfig(),
                    annotation_summary=data.annotation_summary, provenance=provenance)


def _demo_notice() -> str:
    return (
        "> **Demo data, not Cultivar.** This dataset holds the demo data bundled with the Cultivar "
        "toolkit. Its sentences were written for the toolkit, invented in the style of FLORES; "
        "they are not taken from FLORES or from the Cultivar dataset, and scores on them say "
        "nothing about real models. Its ids are demo ids, not FLORES dev line numbers."
    )


def _overview() -> str:
    return (
        "Cultivar is a source-contrastive, locale-oriented machine-translation benchmark "
        f"([{CITATION}]({PAPER_URL})). As the paper describes it, Cultivar takes 200 "
        "named-entity-rich sentences of the FLORES dev set and localises each of them to 27 "
        "locales (a language, a script and a location, "
        "such as `deu_Latn_Switzerland` or `hin_Deva_US`), keeping the sentence structure but "
        "replacing people, places, organisations and other locally specific content. Comparing "
        "a model's translation into English of the original and of the localised sentence "
        "exposes contamination with FLORES and a bias towards some locales."
    )


@dataclass(frozen=True)
class _Origin:
    """What the ids of the published rows index, and where their original sentences are."""

    id_meaning: str
    originals: str  # "original FLORES" or the like, before "sentence"
    take_from: str  # the sentence that says where to take the originals from, by ``id``
    flores: bool  # the originals are FLORES text (its licence and re-hosting request apply)


def _origin(is_demo: bool, kind: str | None,
            build_provenance: dict[str, Any] | None) -> _Origin:
    """The ids' source: the build's own source benchmark (kind ``built``, from its record), the
    demo's ids, or FLORES dev (the paper's dataset)."""
    shared = ", shared by every locale"
    if is_demo:
        return _Origin("demo instance id" + shared, "demo \"original\"", "", False)
    if kind != "built":
        return _Origin("0-based line index in the FLORES dev set" + shared, "original FLORES",
                       "Take them from FLORES+ (`openlanguagedata/flores_plus`, dev split) by "
                       "`id`.", True)
    source = (build_provenance or {}).get("source_benchmark") or {}
    if source.get("kind") == "flores":
        split = str(source.get("split") or build_record.NOT_RECORDED)
        if source.get("origin") == "hub":
            where = (f"{md_code(source.get('repo') or build_record.NOT_RECORDED)} at revision "
                     f"{md_code(source.get('revision') or 'main')}, {md_text(split)} split")
        else:
            where = f"`openlanguagedata/flores_plus`, {md_text(split)} split"
        return _Origin(f"0-based line index in the FLORES {md_text(split)} set{shared} (the "
                       "source benchmark this dataset was built from)", "original FLORES",
                       f"Take them from FLORES+ ({where}) by `id`: this dataset was built from "
                       f"the {md_text(split)} split (read back with the Cultivar toolkit as "
                       f"data kind `local` with originals from FLORES, `flores: local` or `hub`, "
                       f"set `flores_split: {md_text(split)}`).", True)
    what = md_text(build_record.source_description(source, public=True))
    return _Origin(f"id of the instance in the source benchmark it was built from ({what})"
                   f"{shared}", "original",
                   f"Take them from the source benchmark this dataset was built from ({what}) "
                   "by `id`.", False)


def _data_section(
    locales: Sequence[dict[str, Any]], is_demo: bool, include_originals: bool,
    repo_id: str | None, provenance: bool = False, origin: _Origin | None = None,
) -> str:
    origin = origin or _origin(is_demo, None, None)
    rows = [("`id`", origin.id_meaning),
            ("`locale`", "locale key, `<language>_<Script>_<Location>`")]
    if include_originals:
        rows += [("`source_original`", f"{origin.originals} sentence in the source language"),
                 ("`english_original`", f"{origin.originals} English sentence")]
    rows += [("`source_localised`", "the sentence localised to the locale, in the source language"),
             ("`english_localised`", "its English counterpart: the reference for translation "
                                     "into English")]
    if provenance:
        rows += [("`action`", "what the annotation file records was done with the LLM "
                              "paraphrase: `kept`, `edited` or `reverted` (to the original)"),
                 ("`draft_hash`", "sha256 of the LLM draft the annotation was made against"),
                 ("`prompt_hash`", "sha256 of the localisation prompt template")]
    parts = [
        "## Data",
        f"One configuration per locale ({len(locales)} here), each with a single `{SPLIT}` split "
        f"(`data/<locale>/{SPLIT}.parquet`), with these columns:",
        md_table(rows, ["column", "meaning"]),
    ]
    if include_originals and is_demo:
        parts.append("`source_original` and `english_original` are the demo's own \"original\" "
                     "sentences, written for the toolkit like the rest: they are not FLORES.")
    elif include_originals and origin.flores:
        parts.append(
            "`source_original` and `english_original` are the original FLORES sentences "
            "(CC BY-SA 4.0; NLLB Team et al., 2022; Goyal et al., 2022), included by this "
            "repository's configuration. The FLORES maintainers ask that FLORES text not be "
            "re-hosted in plain form where web crawlers can pick it up; keep such a copy gated "
            "or private.")
    elif include_originals:
        parts.append("`source_original` and `english_original` are the sentences of the source "
                     "benchmark this dataset was built from, included by this repository's "
                     "configuration.")
    elif origin.flores:
        parts.append(
            "The original FLORES sentences are not included. FLORES, like Cultivar, is licensed "
            "under CC BY-SA 4.0, which would allow redistribution with attribution, but its "
            "maintainers ask that FLORES text not be re-hosted in plain form where web crawlers "
            "can pick it up (to limit contamination of future models). " + origin.take_from)
    elif is_demo:
        parts.append("The demo's own \"original\" sentences are not included; they are bundled "
                     "with the Cultivar toolkit (`cultivar_assets/data/demo`), by `id`.")
    else:
        parts.append("The original sentences are not included. " + origin.take_from)
    if repo_id and REPO_ID.match(repo_id):
        parts.append("```python\nfrom datasets import load_dataset\n\n"
                     f"data = load_dataset({repo_id!r}, {str(locales[0]['locale'])!r}, "
                     f"split={SPLIT!r})\n```")
    return "\n\n".join(parts)


def _locales_section(locales: Sequence[dict[str, Any]]) -> str:
    rows = [
        (md_code(row["locale"]), md_text(row["language_name"]), md_code(row["script"]),
         md_text(row["location"]), "yes" if row["official_or_de_facto"] else "no",
         str(int(row["n_instances"])))
        for row in locales
    ]
    table = md_table(rows, ["Locale", "Language", "Script", "Location",
                            "Official or de facto", "Instances"])
    return ("## Locales\n\n" + table + "\n\n\"Official or de facto\": whether the language has "
            "official or de facto status at the location.")


def _md_plain(text: str) -> str:
    """Escaped text that keeps a leading and a trailing space (it sits between code spans)."""
    if not text.strip():
        return " " if text else ""
    return ((" " if text[0].isspace() else "") + md_text(text)
            + (" " if text[-1].isspace() else ""))


def render_facts_md(sections: Sequence[Section], level: int = 3) -> str:
    """Facts as Markdown: a heading per section, its lead, one bullet per fact (escaped)."""
    out = []
    for section in sections:
        lines = [f"{'#' * level} {md_text(section.title)}"]
        if section.lead:
            lines.append(md_text(section.lead))
        lines.append("\n".join(
            f"- **{md_text(fact.label)}:** "
            + "".join(md_code(text) if code else _md_plain(text) for text, code in fact.parts)
            for fact in section.facts))
        out.append("\n\n".join(lines))
    return "\n\n".join(out)


def _method_section(kind: str | None, is_demo: bool,
                    build_provenance: dict[str, Any] | None) -> str:
    lead = method_lead(kind, is_demo)
    return "\n\n".join(part for part in (
        "## How the data was made", md_text(lead) if lead else None,
        render_facts_md(method_sections(kind, is_demo, build_provenance))) if part)


def _computed_annotation_section(rows: Sequence[dict[str, Any]],
                                 build_provenance: dict[str, Any] | None = None) -> str | None:
    if not rows:
        return None
    cells = [
        [md_code(row["locale"]) if key == "locale" else md_text(format_value(row[key], key))
         for key, _ in TABLE1_COLUMNS] + [md_text(row["n_instances"])]
        for row in rows
    ]
    return (
        "## Annotation statistics (computed from the annotation files)\n\n"
        f"{md_text(table1_scope(build_provenance))} An edit is a maximal run of changed "
        "words (characters for Chinese and Japanese) between the LLM "
        "paraphrase and the final text; the averages are over the edited or reverted instances "
        "whose side changed (our reading of the paper's definition; see "
        "`cultivar_assets/construction/annotation/stats.py`).\n\n"
        + md_table(cells, [header for _, header in TABLE1_COLUMNS] + ["Instances"])
    )


def _annotation_section(locales: Sequence[str], is_demo: bool,
                        built: bool = False) -> str | None:
    table1 = reported_table1()
    present = [table1[key] for key in locales if key in table1]
    if not present:
        return None
    rows = [
        [md_code(row[key]) if key == "locale" else md_text(row[key]) for key, _ in TABLE1_COLUMNS]
        for row in present
    ]
    scope = (" They describe the paper's Cultivar dataset, not this demo data." if is_demo else
             " They describe the paper's Cultivar dataset, not this build." if built else "")
    return (
        "## Annotation statistics (reported)\n\n"
        f"As reported by the paper ([{CITATION}]({PAPER_URL}), Table 1), not computed from this "
        f"data: how the annotators treated the 200 LLM paraphrases of each locale, and the "
        f"average number of edits per edited instance.{scope}\n\n"
        + md_table(rows, [header for _, header in TABLE1_COLUMNS])
    )


def _licence_section(is_demo: bool, include_originals: bool) -> str:
    if is_demo:
        what = ("The demo data was written for the Cultivar toolkit and contains no FLORES text. "
                "It follows the design of Cultivar, which is derived from FLORES: please cite "
                "both (see Citation).")
    else:
        what = ("Cultivar is derived from FLORES (FLORES-200 and FLORES+, CC BY-SA 4.0; NLLB Team "
                "et al., 2022; Goyal et al., 2022). When you use or redistribute this data, "
                "credit the Cultivar paper and FLORES (see Citation) and share adaptations under "
                "the same licence.")
        if include_originals:
            what += " This copy includes original FLORES sentences."
    return f"## Licence and attribution\n\n[CC BY-SA 4.0]({LICENSE_URL}). {what}"


def _citation_section() -> str:
    return (
        "## Citation\n\n"
        f"Cultivar:\n\n```bibtex\n{CULTIVAR_BIBTEX}\n```\n\n"
        f"FLORES:\n\n```bibtex\n{FLORES_BIBTEX}\n```"
    )


def parse_readme(text: str) -> Card:
    """Split a ``README.md`` into its front matter (empty when there is none) and body."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return Card({}, text)
    try:
        front_matter = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as error:
        raise CardError(f"the card's front matter is not valid YAML: {error}") from error
    if not isinstance(front_matter, dict):
        raise CardError("the card's front matter is not a YAML mapping")
    return Card(front_matter, text[match.end():].lstrip("\n"))


def merge_front_matter(
    existing: dict[str, Any], ours: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """Our front matter, plus what the existing card has that ours does not replace.

    Existing keys that we do not set are kept; ``configs`` keeps the existing configurations whose
    name we do not have (ours replace those of the same name; where ours mark a default, a kept
    one is no longer marked: a card has one default); ``language`` is the union, since the kept
    configurations' data stays in the repository. Returns the result and the kept names.
    """
    merged = dict(ours)
    for key, value in existing.items():
        merged.setdefault(key, value)
    ours_names = {entry["config_name"] for entry in ours.get("configs", [])}
    kept = [entry for entry in existing.get("configs") or []
            if isinstance(entry, dict) and entry.get("config_name", "default") not in ours_names]
    if any(entry.get("default") for entry in ours.get("configs", [])):
        kept = [{k: v for k, v in entry.items() if k != "default"} for entry in kept]
    merged["configs"] = [*ours.get("configs", []), *kept]
    old_languages = existing.get("language") or []
    if isinstance(old_languages, str):
        old_languages = [old_languages]
    languages = list(ours.get("language", []))
    merged["language"] = languages + [code for code in old_languages if code not in languages]
    return merged, [entry.get("config_name", "default") for entry in kept]
