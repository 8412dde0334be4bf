"""A model's registry entry (``models.yaml``) as a typed record: the leaf every layer can import.

Validation of a whole registry (engine and prompt-style names, duplicates) and its loading live in
:mod:`cultivar_assets.models`; what a run's outputs depend on (the fingerprint) in
:mod:`cultivar_assets.engines.fingerprint`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cultivar_assets.secrets import refuse_misplaced_secrets

ModelType = Literal["LLM", "MT", "LLM+MT", "baseline"]
# Model ids name partitions, cache files and site pages: a Hub repository name's characters, and
# at most 96 of them (the Hub's own limit for a repository name).
MODEL_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+-]*$"
MODEL_ID_MAX_LENGTH = 96

REPORTED_SOURCE = (
    "Chen et al., Cultivar: A Contrastive and Locale-Oriented Translation Benchmark for "
    "Investigating Contamination and Localisation Robustness, arXiv 2608.09766 (2026), Table 3"
)


def hf_id_problem(hf_id: str) -> str | None:
    """Why ``hf_id`` cannot name a model's weights (None: it can). An ``hf_id`` is a Hub
    repository id or an API's model name, whose parts between ``/`` are non-empty and neither
    ``.`` nor ``..``, or an absolute path to a local folder (``/``-rooted, no ``.``/``..``
    parts); it holds no backslash, whitespace or control character and does not start with
    ``~``. A relative path such as ``../../x`` is refused: it would load whatever folder lies
    there, relative to wherever the run starts."""
    if not hf_id:
        return "is empty"
    if any(char.isspace() or ord(char) < 0x20 or ord(char) == 0x7F or char == "\\"
           for char in hf_id):
        return "holds whitespace, a control character or a backslash"
    if hf_id.startswith("~"):
        return "starts with '~': write a local folder as an absolute path"
    parts = hf_id.removeprefix("/").split("/")
    if any(part in ("", ".", "..") for part in parts):
        return ("has an empty, '.' or '..' part between '/': write a Hub repository id "
                "(owner/name) or a local folder as an absolute path")
    return None


class ReportedResults(BaseModel):
    """Figures published in the paper (Table 3) for a model: reported, never evaluated here."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    delta_bleu: float
    delta_chrf: float
    flores_bleu: float
    flores_chrf: float
    cultivar_bleu: float
    cultivar_chrf: float
    false_positive_rate: float
    false_negative_rate: float


class ModelSpec(BaseModel):
    """One entry of the model registry (field meanings: the header of ``models.yaml``)."""

    # engine_options may hold a misplaced secret: pydantic's message never repeats an input
    model_config = ConfigDict(extra="forbid", frozen=True, protected_namespaces=(),
                              hide_input_in_errors=True)

    id: str = Field(pattern=MODEL_ID_PATTERN, max_length=MODEL_ID_MAX_LENGTH)
    hf_id: str | None = None
    revision: str | None = None
    weights: str = "hub"
    type: ModelType
    family: str
    # billions of parameters: a finite number above 0 (.inf and .nan are refused)
    params_total_b: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    params_active_b: float | None = Field(default=None, gt=0, allow_inf_nan=False)  # None: unknown
    engine: str
    prompt_style: str
    engine_options: dict[str, Any] = {}
    suites: list[str] = []
    notes: str | None = None
    path: str | None = None  # engine outputs: the submission's folder or manifest
    license: str | None = None  # the weights' licence as its holder names it (None: not recorded)
    reported: ReportedResults | None = None  # the paper's Table 3 figures, kept apart

    @field_validator("hf_id")
    @classmethod
    def _hf_id_is_a_repository_or_an_absolute_folder(cls, value: str | None) -> str | None:
        """A Hugging Face repository id (``owner/name``; an API's model name) or an absolute
        path to a local weights folder; never a relative path (:func:`hf_id_problem`)."""
        problem = None if value is None else hf_id_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("engine_options")
    @classmethod
    def _no_secret_in_engine_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        """A key's value in ``api_key_env``, a ``token``/``api_key`` option or a URL with
        credentials is refused (:func:`cultivar_assets.secrets.misplaced_secrets`): the entry is
        stored in the database and published with the site."""
        return refuse_misplaced_secrets(value)
