"""How the paper's two metrics are configured as sacreBLEU objects (paper §3.2).

- **spBLEU**: ``sacrebleu.metrics.BLEU(tokenize="flores200")``: corpus BLEU (Papineni et al., 2002)
  over SentencePiece pieces of the FLORES-200 model,
  ``BLEU = BP * exp(mean_{n=1..4} log p_n)``, ``p_n = sum_s match_n(s) / sum_s hyp_count_n(s)``,
  ``BP = min(1, exp(1 - ref_len / hyp_len))``, times 100.
- **chrF**: ``sacrebleu.metrics.CHRF(word_order=0)``: character n-gram F-score (Popović, 2015),
  n = 1..6, whitespace removed, ``chrF = 100 * (1 + β²) P R / (β² P + R)`` with β = 2, where
  P and R are the averages over n of corpus-level n-gram precision and recall.

The metric objects are built by the entries of :mod:`cultivar_assets.metrics.registry` (which
also holds chrF++ and TER) from the settings
(:class:`cultivar_assets.metrics.metric_config.MetricConfig`).

The flores200 SentencePiece model is never downloaded: it is looked for where sacreBLEU caches
it or at ``spm_model_path`` (:func:`spm_model_location`); without it, building the metric stops
unless the configuration selects another BLEU tokenizer explicitly. Beside a SentencePiece
signature the sha256 of the model file used is stored (``tokenizer_sha256``), and scores whose
signature or tokenizer hash differ are never aggregated together (docs/metrics.md).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from cultivar_assets.files import file_sha256

if TYPE_CHECKING:  # a type only: the settings' model imports this module
    from cultivar_assets.metrics.metric_config import MetricConfig

SPM_TOKENIZERS = ("flores200", "flores101", "spBLEU-1K")
OTHER_TOKENIZERS = ("13a", "intl", "char", "zh", "none", "ja-mecab", "ko-mecab")


class MetricUnavailableError(RuntimeError):
    """A metric cannot be computed as configured (e.g. the SentencePiece model is missing)."""


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
