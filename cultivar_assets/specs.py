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
    params_total_b: float | None = Field(default=None, gt=0)
    params_active_b: float | None = Field(default=None, gt=0)  # None: not known
    engine: str
    prompt_style: str
    engine_options: dict[str, Any] = {}
    suites: list[str] = []
    notes: str | None = None
    path: str | None = None  # engine outputs: the submission's folder or manifest
    license: str | None = None  # the weights' licence as its holder names it (None: not recorded)
    reported: ReportedResults | None = None  # the paper's Table 3 figures, kept apart

    @field_validator("engine_options")
    @classmethod
    def _no_secret_in_engine_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        """A key's value in ``api_key_env``, a ``token``/``api_key`` option or a URL with
        credentials is refused (:func:`cultivar_assets.secrets.misplaced_secrets`): the entry is
        stored in the database and published with the site."""
        return refuse_misplaced_secrets(value)
