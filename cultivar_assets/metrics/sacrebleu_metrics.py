"""How the paper's two metrics are configured as sacreBLEU objects (paper §3.2).

- **spBLEU**: ``sacrebleu.metrics.BLEU(tokenize="flores200")``: corpus BLEU (Papineni et al., 2002)
  over SentencePiece pieces of the FLORES-200 model,
  ``BLEU = BP * exp(mean_{n=1..4} log p_n)``, ``p_n = sum_s match_n(s) / sum_s hyp_count_n(s)``,
  ``BP = min(1, exp(1 - ref_len / hyp_len))``, times 100.
- **chrF**: ``sacrebleu.metrics.CHRF(word_order=0)``: character n-gram F-score (Popović, 2015),
  n = 1..6, whitespace removed, ``chrF = 100 * (1 + β²) P R / (β² P + R)`` with β = 2, where
  P and R are the averages over n of corpus-level n-gram precision and recall.

The metric objects are built by the entries of :mod:`cultivar_assets.metrics.registry` (which
also holds chrF++ and TER) from the settings here (:class:`MetricConfig`).

The flores200 SentencePiece model is never downloaded here: it is looked for where sacreBLEU
caches it (``$SACREBLEU/models/flores200sacrebleuspm``, ``$SACREBLEU`` defaulting to
``~/.sacrebleu``) or at ``spm_model_path``. When it is absent, building the metric stops with a
message saying where to put it, unless the configuration selects another BLEU tokenizer
explicitly; the signature then names that tokenizer. Signatures are stored exactly as sacreBLEU
formats them; for SentencePiece tokenizers the sha256 of the model file actually used is stored
beside the signature (``tokenizer_sha256``, a column of its own in ``scores`` and the
leaderboard), and scores whose signature *or* tokenizer hash differ are never aggregated
together, so scores from a stand-in model never pass for spBLEU (sacreBLEU itself checks no hash).

The same settings (``metrics`` in the settings file) hold how the cross-model statistics are
computed from the stored scores (issue 11): the paired bootstrap (``bootstrap_replicates``,
``bootstrap_seed``, ``confidence``; :mod:`cultivar_assets.metrics.bootstrap`) and the
contamination rules (``flags``: the fields of :class:`cultivar_assets.metrics.flags.FlagConfig`,
``{}`` for its defaults). They change no score, only intervals, ranks and flags.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from cultivar_assets.files import file_sha256
from cultivar_assets.metrics.bootstrap import SACREBLEU_DEFAULT_SEED, BootstrapConfig
from cultivar_assets.metrics.flags import FlagConfig

SPM_TOKENIZERS = ("flores200", "flores101", "spBLEU-1K")
OTHER_TOKENIZERS = ("13a", "intl", "char", "zh", "none", "ja-mecab", "ko-mecab")


class MetricUnavailableError(RuntimeError):
    """A metric cannot be computed as configured (e.g. the SentencePiece model is missing)."""


PAPER_METRICS = ("bleu", "chrf")  # the paper's spBLEU and chrF: the default ``metrics``


class MetricConfig(BaseModel):
    """Which metrics are scored and aggregated, and how. Defaults are the paper's: spBLEU
    (flores200) and chrF."""

    model_config = ConfigDict(extra="forbid")

    # registry names (cultivar_assets.metrics.registry), scored, stored and aggregated in this
    # order; the leaderboard's wide views show bleu and chrf, every one is in leaderboard_metrics
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
        # imported here: the registry imports this module
        from cultivar_assets.metrics.registry import column_key, metric_registry

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


def sacrebleu_dir() -> Path:
    """sacreBLEU's cache folder, read the way sacreBLEU reads it (``$SACREBLEU``)."""
    from sacrebleu.utils import SACREBLEU_DIR

    return Path(os.environ.get("SACREBLEU", SACREBLEU_DIR))


def spm_model_location(config: MetricConfig) -> Path:
    """Where the SentencePiece model of ``config.bleu_tokenize`` must be."""
    if config.spm_model_path:
        return Path(config.spm_model_path).expanduser()
    from sacrebleu.tokenizers.tokenizer_spm import SPM_MODELS

    return sacrebleu_dir() / "models" / os.path.basename(SPM_MODELS[config.bleu_tokenize]["url"])


def spm_tokenizer(config: MetricConfig):
    """sacreBLEU's SentencePiece tokenizer, loaded from a file we checked, never downloaded."""
    import sentencepiece
    from sacrebleu.tokenizers.tokenizer_spm import SPM_MODELS, TokenizerSPM

    path = spm_model_location(config)
    if not path.is_file():
        raise MetricUnavailableError(
            f"spBLEU needs the {config.bleu_tokenize} SentencePiece model, which is not at {path} "
            "and cannot be downloaded here. Put the file there (sacreBLEU downloads it from "
            f"{SPM_MODELS[config.bleu_tokenize]['url']}), or point metrics.spm_model_path at it, "
            "or select another BLEU tokenizer explicitly (metrics.bleu_tokenize, e.g. '13a'): the "
            "stored signature then names that tokenizer and such scores are kept apart."
        )
    tokenizer = TokenizerSPM.__new__(TokenizerSPM)  # its __init__ would download a missing file
    tokenizer.name = SPM_MODELS[config.bleu_tokenize]["signature"]
    tokenizer.sp = sentencepiece.SentencePieceProcessor()
    tokenizer.sp.Load(str(path))
    return tokenizer, file_sha256(path)
