"""The ``metrics`` settings (:class:`MetricConfig`): which registry metrics are scored and how
(:mod:`cultivar_assets.metrics.sacrebleu_metrics`), and how the cross-model statistics are
computed from the stored scores: the paired bootstrap (``bootstrap_replicates``,
``bootstrap_seed``, ``confidence``; :mod:`cultivar_assets.metrics.bootstrap`) and the
contamination rules (``flags``: the fields of :class:`cultivar_assets.metrics.flags.FlagConfig`,
``{}`` for its defaults), which change no score, only intervals, ranks and flags."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from cultivar_assets.metrics.bootstrap import SACREBLEU_DEFAULT_SEED, BootstrapConfig
from cultivar_assets.metrics.flags import FlagConfig
from cultivar_assets.metrics.registry import PAPER_METRICS, column_key, metric_registry
from cultivar_assets.metrics.sacrebleu_metrics import OTHER_TOKENIZERS, SPM_TOKENIZERS


class MetricConfig(BaseModel):
    """Which metrics are scored and aggregated, and how. Defaults are the paper's: spBLEU
    (flores200) and chrF."""

    model_config = ConfigDict(extra="forbid")

    # registry names (cultivar_assets.metrics.registry), scored, stored and aggregated in this
    # order; the leaderboard's wide views show the paper's (PAPER_METRICS), every one is in
    # leaderboard_metrics
    metrics: list[str] = Field(default_factory=lambda: list(PAPER_METRICS), min_length=1)
    bleu_tokenize: str = "flores200"
    spm_model_path: str | None = None
    chrf_word_order: int = 0
    lowercase: bool = False
    # sacreBLEU TER's options (signature norm:, punct:, asian:); default: its own defaults
    ter_normalized: bool = False
    ter_no_punct: bool = False
    ter_asian_support: bool = False
    # statistics over the stored scores (module docstring); defaults: B = 1,000, seed 12345, 95 %
    bootstrap_replicates: int = Field(1000, ge=1, le=100_000)
    bootstrap_seed: int = Field(SACREBLEU_DEFAULT_SEED, ge=1)  # 0 would be unseeded in sacreBLEU
    confidence: float = Field(0.95, gt=0, lt=1)
    flags: dict[str, Any] = Field(default_factory=dict)  # FlagConfig fields; {}: its defaults

    @field_validator("flags")
    @classmethod
    def _valid_flags(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            FlagConfig.model_validate(value)
        except ValidationError as error:
            raise ValueError(f"invalid contamination rules (metrics.flags): {error}") from None
        return value

    def bootstrap_config(self) -> BootstrapConfig:
        """The paired bootstrap's configuration."""
        return BootstrapConfig(n_replicates=self.bootstrap_replicates, seed=self.bootstrap_seed,
                               confidence=self.confidence)

    def flag_config(self) -> FlagConfig:
        """The contamination rules' configuration."""
        return FlagConfig.model_validate(self.flags)

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, value: list[str]) -> list[str]:
        known = list(metric_registry())
        unknown = [name for name in value if name not in known]
        if unknown:
            raise ValueError(f"unknown metrics {unknown}; the registry's metrics: "
                             f"{', '.join(known)}")
        for name in value:
            column_key(name)  # every name has a column key
        if len(set(value)) != len(value):
            raise ValueError(f"metrics listed twice: {value}")
        return value

    @field_validator("bleu_tokenize")
    @classmethod
    def _known_tokenizer(cls, value: str) -> str:
        if value not in SPM_TOKENIZERS + OTHER_TOKENIZERS:
            raise ValueError(
                f"unknown BLEU tokenizer {value!r}; choose one of "
                f"{', '.join(SPM_TOKENIZERS + OTHER_TOKENIZERS)}"
            )
        return value

    @field_validator("chrf_word_order")
    @classmethod
    def _order(cls, value: int) -> int:
        if not 0 <= value <= 2:
            raise ValueError("chrf_word_order must be 0 (chrF, the paper's) , 1 or 2 (chrF++)")
        return value
