"""Metrics as registry entries (after sacreBLEU's ``metrics/base.py``): one entry per metric.

An entry is data: its ``name`` (the key in the registry and in the store), a display ``label``,
whether higher is better, and its *kind*:

- ``"statistics"`` (:class:`StatisticsMetric`): every segment gives a vector of sufficient
  statistics of a fixed width; the corpus score is a function of their sum, so a bootstrap only
  re-sums. The statistics are sacreBLEU's (the metric object it builds from the settings); the
  corpus score is sacreBLEU's ``_compute_score_from_stats`` of the summed integers
  (:meth:`BuiltStatistics.corpus_score`) and, vectorised over many sums at once,
  :mod:`cultivar_assets.metrics.score_arrays`, equal to it bit for bit.
- ``"segment scores"`` (:class:`SegmentScoreMetric`): every segment gets one score and the
  corpus score is their mean — the shape of neural metrics such as COMET. The pipeline stores
  the scores (``raw.segment_scores``) and resamples them as statistics ``[score, 1]``, whose
  summed ratio is the mean (:meth:`SegmentScoreMetric.score_from_stats`).

Built-in entries (definitions; ``h`` hypothesis, ``r`` reference, sums over the segments):

- ``bleu`` — spBLEU by default: ``BLEU = BP · exp(Σ_{n=1..4} log p_n / 4) · 100`` with
  ``p_n = Σ match_n / Σ hyp_count_n`` and ``BP = min(1, exp(1 − Σ|r| / Σ|h|))``, "exp"
  smoothing, over the tokens of ``metrics.bleu_tokenize`` (flores200 SentencePiece pieces by
  default; the model is never downloaded:
  :func:`cultivar_assets.metrics.sacrebleu_metrics.spm_model_location`). Statistics
  ``[hyp_len, ref_len, match_1..4, hyp_count_1..4]``.
- ``chrf`` — ``chrF = 100 · (1 + β²) P R / (β² P + R)``, β = 2, ``P``/``R`` the means over the
  character orders 1..6 (and word orders 1..``metrics.chrf_word_order``, 0 by default) of the
  corpus n-gram precision and recall. Statistics ``[hyp_n, ref_n, match_n]`` per order.
- ``chrf++`` — the same with word orders 1..2 (``CHRF(word_order=2)``), whatever the settings'
  ``chrf_word_order``.
- ``ter`` — ``TER = 100 · Σ edits / Σ |r|`` (tercom tokenisation; edits: insertions, deletions,
  substitutions and block shifts, sacreBLEU's ``TER``), 100 when the references are empty and
  the hypotheses are not, 0 when both are; **lower is better**. Case-sensitive unless
  ``metrics.lowercase`` (sacreBLEU's ``TER()`` alone defaults to case-insensitive); its
  normalisation, punctuation removal and Asian-script support are ``metrics.ter_normalized``,
  ``ter_no_punct`` and ``ter_asian_support`` (off by default, as in sacreBLEU). Statistics
  ``[edits, ref_len]``.

All use the settings' ``lowercase``; every signature is sacreBLEU's ``get_signature().format()``
with one reference (``nrefs:1``). :func:`metric_registry` holds the built-in entries, then those
that installed distributions declare in the entry-point group :data:`ENTRY_POINT_GROUP`
(``cultivar.metrics``; docs/extending.md): ``name = "module:attribute"``, the attribute an entry
(:class:`StatisticsMetric` or :class:`SegmentScoreMetric`) whose ``name`` is that name. A name
already taken is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np

from cultivar_assets.metrics.ngram_stats import char_unit_ids, match_statistics, token_unit_ids
from cultivar_assets.metrics.sacrebleu_metrics import SPM_TOKENIZERS, spm_tokenizer
from cultivar_assets.metrics.score_arrays import BLEU_ORDER, bleu_from_stats, chrf_from_stats
from cultivar_assets.registry import Registry

if TYPE_CHECKING:  # a type only: the settings' model imports this module
    from cultivar_assets.metrics.metric_config import MetricConfig

ENTRY_POINT_GROUP = "cultivar.metrics"
# The paper's metrics, spBLEU and chrF (the names of the first two built-in entries): the default
# ``metrics`` of the settings, the metrics of the paper's wide views (sql/views.sql, rendered by
# :func:`cultivar_assets.store.database.views_script`) and of its tables. Every other module takes
# them from here.
BLEU, CHRF = "bleu", "chrf"
PAPER_METRICS: tuple[str, ...] = (BLEU, CHRF)
METRIC_NAMES = PAPER_METRICS  # the paper's metrics: the ones the pipeline scores and stores


def column_key(metric: str) -> str:
    """The key of a metric's name in column names (``delta_<key>``, ``leaderboard_ranks``'
    quantities): the name with ``++`` written ``pp`` (``chrf++`` → ``chrfpp``), which must then
    be a lowercase SQL identifier."""
    key = metric.replace("++", "pp")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", key):
        raise ValueError(f"metric {metric!r} has no safe column key ({key!r}): use lowercase "
                         "letters, digits, _ and ++")
    return key


# (sacreBLEU metric object, references, hypothesis rows, reference index of each row) -> stats
StatsExtractor = Callable[[Any, Sequence[str], Sequence[str], np.ndarray], np.ndarray]


def sacrebleu_statistics(metric, refs: Sequence[str], rows: Sequence[str],
                         segs: np.ndarray) -> np.ndarray:
    """Per-row statistics from sacreBLEU's own ``_extract_corpus_statistics`` (one reference
    each), as int64; any metric object of ``sacrebleu.metrics`` with integer statistics."""
    stats = metric._extract_corpus_statistics(list(rows), [[refs[s] for s in segs]])
    values = np.asarray(stats, dtype=np.float64).reshape(len(rows), -1)
    integral = values.astype(np.int64)
    if (integral != values).any():
        raise ValueError(f"{type(metric).__name__} statistics are not whole numbers")
    return integral


def bleu_statistics(bleu, refs: Sequence[str], rows: Sequence[str],
                    segs: np.ndarray) -> np.ndarray:
    """sacreBLEU's BLEU statistics of every row, vectorised: references are tokenised once."""
    tokens = [bleu._preprocess_segment(text).split() for text in (*refs, *rows)]
    ids, lengths, vocabulary = token_unit_ids(tokens)
    hyp_count, _, match = match_statistics(ids, lengths, vocabulary, len(refs), segs, BLEU_ORDER)
    return np.column_stack([lengths[len(refs):], lengths[: len(refs)][segs], match, hyp_count])


def _interleave(*columns: np.ndarray) -> np.ndarray:
    """[a1, b1, c1, a2, b2, c2, ...] from per-order columns a, b, c of shape (rows, orders)."""
    stacked = np.stack(columns, axis=2)
    return stacked.reshape(stacked.shape[0], -1)


def chrf_statistics(chrf, refs: Sequence[str], rows: Sequence[str],
                    segs: np.ndarray) -> np.ndarray:
    """sacreBLEU's chrF (and chrF++) statistics of every row, vectorised."""
    texts = [chrf._preprocess_segment(text) for text in (*refs, *rows)]
    chars = texts if chrf.whitespace else ["".join(text.split()) for text in texts]
    ids, lengths, alphabet = char_unit_ids(chars)
    parts = [match_statistics(ids, lengths, alphabet, len(refs), segs, chrf.char_order)]
    if chrf.word_order > 0:
        words = [chrf._remove_punctuation(text) for text in texts]
        ids, lengths, vocabulary = token_unit_ids(words)
        parts.append(match_statistics(ids, lengths, vocabulary, len(refs), segs, chrf.word_order))
    columns = []
    for hyp_count, ref_count, match in parts:
        # sacreBLEU counts no hypothesis n-grams of an order the reference does not have
        columns.append(_interleave(np.where(ref_count > 0, hyp_count, 0), ref_count, match))
    return np.concatenate(columns, axis=1)


def ter_from_stats(stats: np.ndarray) -> np.ndarray:
    """TER of summed statistics ``stats[..., 2]`` = ``[edits, ref_len]``, as sacreBLEU's
    ``TER._compute_score_from_stats``: ``100 · edits / ref_len``; 100 (``ref_len`` 0, edits) or
    0 (neither) for empty references."""
    stats = np.asarray(stats, dtype=np.float64)
    if stats.shape[-1] != 2:
        raise ValueError(f"TER statistics have 2 columns, not {stats.shape[-1]}")
    edits, ref_len = stats[..., 0], stats[..., 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(ref_len > 0, edits / ref_len, np.where(edits > 0, 1.0, 0.0))
    return 100 * ratio


class Built(NamedTuple):
    """What an entry's ``make`` returns: the configured sacreBLEU object and the sha256 of the
    tokenizer model it loaded (None without one)."""

    metric: Any
    tokenizer_sha256: str | None = None


@dataclass(frozen=True)
class StatisticsMetric:
    """A metric whose corpus score is a function of summed per-segment statistics.

    ``make(config)`` builds the sacreBLEU metric object (or raises
    :class:`~cultivar_assets.metrics.sacrebleu_metrics.MetricUnavailableError`); ``width(metric)``
    is the number of statistics per segment; ``score_from_stats`` the corpus score of summed
    statistics on arrays (last axis: the statistics), equal to ``metric._compute_score_from_stats``
    bit for bit; ``statistics`` extracts them (default: sacreBLEU's own, segment by segment).
    """

    name: str
    label: str
    higher_is_better: bool
    make: Callable[[MetricConfig], Built]
    width: Callable[[Any], int]
    score_from_stats: Callable[[np.ndarray], np.ndarray]
    statistics: StatsExtractor = sacrebleu_statistics
    kind: ClassVar[str] = "statistics"

    def build(self, config: MetricConfig) -> BuiltStatistics:
        metric, digest = self.make(config)
        metric.num_refs = 1  # Cultivar has one reference per segment
        return BuiltStatistics(self, metric, metric.get_signature().format(), digest,
                               self.width(metric))


@dataclass(frozen=True)
class BuiltStatistics:
    """A statistics entry configured: its sacreBLEU object, signature and statistics width."""

    entry: StatisticsMetric
    metric: Any
    signature: str  # exactly as sacreBLEU formats it
    tokenizer_sha256: str | None
    width: int

    @property
    def kind(self) -> str:
        return self.entry.kind

    def segment_statistics(self, references: Sequence[str], hypotheses: Sequence[str],
                           segs: np.ndarray | None = None) -> np.ndarray:
        """(rows, width) int64 statistics of ``hypotheses[i]`` against ``references[segs[i]]``
        (``segs`` default: ``0..n−1``, one hypothesis per reference)."""
        if segs is None:
            segs = np.arange(len(hypotheses), dtype=np.int64)
        stats = np.asarray(self.entry.statistics(self.metric, references, hypotheses, segs),
                           dtype=np.int64)
        if stats.shape != (len(hypotheses), self.width):
            raise ValueError(f"{self.entry.name}: statistics of shape {stats.shape}, expected "
                             f"({len(hypotheses)}, {self.width})")
        return stats

    def corpus_score(self, stats: np.ndarray) -> float:
        """The corpus score of per-segment statistics ``stats[n, width]``: sacreBLEU's
        ``_compute_score_from_stats`` of their (integer) sums."""
        totals = [int(x) for x in np.asarray(stats).sum(axis=0)]
        return float(self.metric._compute_score_from_stats(totals).score)

    def scores(self, summed: np.ndarray) -> np.ndarray:
        """Corpus scores of many summed statistics at once (``summed[..., width]``)."""
        return self.entry.score_from_stats(summed)


@dataclass(frozen=True)
class SegmentScoreMetric:
    """A metric that scores each segment; the corpus score is the mean of the segment scores.

    ``score_segments(hypotheses, references, sources)`` returns one float per segment
    (``sources`` may be None; COMET-like metrics use them). ``signature`` names the metric and
    its version (the model and its revision for a neural metric), so that scores from different
    models are never mixed.
    """

    name: str
    label: str
    higher_is_better: bool
    score_segments: Callable[[Sequence[str], Sequence[str], Sequence[str] | None], Sequence[float]]
    signature: str
    kind: ClassVar[str] = "segment scores"

    def build(self, config: MetricConfig | None = None) -> SegmentScoreMetric:
        return self  # nothing to configure: the entry is its own built form

    @property
    def tokenizer_sha256(self) -> None:
        return None

    def segment_scores(self, references: Sequence[str], hypotheses: Sequence[str],
                       sources: Sequence[str] | None = None) -> np.ndarray:
        """(n,) float64 scores of ``hypotheses[i]`` against ``references[i]``."""
        if len(hypotheses) != len(references):
            raise ValueError(f"{self.name}: {len(hypotheses)} hypotheses for "
                             f"{len(references)} references")
        scores = np.asarray(self.score_segments(hypotheses, references, sources),
                            dtype=np.float64)
        if scores.shape != (len(hypotheses),):
            raise ValueError(f"{self.name}: {scores.shape} scores for {len(hypotheses)} segments")
        return scores

    def corpus_score(self, scores: np.ndarray) -> float:
        """The mean of the segment scores (``math.fsum`` / n: correctly rounded sum)."""
        import math

        scores = np.asarray(scores, dtype=np.float64)
        if scores.size == 0:
            raise ValueError(f"{self.name}: no segment scores")
        return math.fsum(scores.tolist()) / scores.size

    @staticmethod
    def score_from_stats(stats: np.ndarray) -> np.ndarray:
        """The mean of summed statistics ``stats[..., 2]`` = ``[Σ score, n]``
        (:meth:`~cultivar_assets.metrics.segment_stats.SegmentStats.of_scores`): ``Σ score / n``,
        NaN where ``n`` is 0. What the bootstrap resamples (point estimate: the mean of the
        scores, as :meth:`corpus_score` up to the rounding of the sum)."""
        stats = np.asarray(stats, dtype=np.float64)
        if stats.shape[-1] != 2:
            raise ValueError(f"segment-score statistics have 2 columns, not {stats.shape[-1]}")
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(stats[..., 1] > 0, stats[..., 0] / stats[..., 1], np.nan)


MetricEntry = StatisticsMetric | SegmentScoreMetric
BuiltMetric = BuiltStatistics | SegmentScoreMetric


def _make_bleu(config: MetricConfig) -> Built:
    from sacrebleu.metrics import BLEU

    if config.bleu_tokenize not in SPM_TOKENIZERS:
        return Built(BLEU(tokenize=config.bleu_tokenize, lowercase=config.lowercase))
    tokenizer, digest = spm_tokenizer(config)  # never downloads; fails loudly when missing
    bleu = BLEU(tokenize="none", lowercase=config.lowercase)
    bleu.tokenizer = tokenizer
    bleu.tokenizer_signature = tokenizer.signature()
    return Built(bleu, digest)


def _make_chrf(word_order: int | None) -> Callable[[MetricConfig], Built]:
    def make(config: MetricConfig) -> Built:
        from sacrebleu.metrics import CHRF

        order = config.chrf_word_order if word_order is None else word_order
        return Built(CHRF(word_order=order, lowercase=config.lowercase))
    return make


def _make_ter(config: MetricConfig) -> Built:
    from sacrebleu.metrics import TER

    return Built(TER(case_sensitive=not config.lowercase, normalized=config.ter_normalized,
                     no_punct=config.ter_no_punct, asian_support=config.ter_asian_support))


def _chrf_width(chrf) -> int:
    return 3 * (chrf.char_order + chrf.word_order)


BUILT_IN: tuple[StatisticsMetric, ...] = (
    StatisticsMetric(BLEU, "spBLEU", True, _make_bleu, lambda _: 2 + 2 * BLEU_ORDER,
                     bleu_from_stats, bleu_statistics),
    StatisticsMetric(CHRF, "chrF", True, _make_chrf(None), _chrf_width, chrf_from_stats,
                     chrf_statistics),
    StatisticsMetric("chrf++", "chrF++", True, _make_chrf(2), _chrf_width, chrf_from_stats,
                     chrf_statistics),
    StatisticsMetric("ter", "TER", False, _make_ter, lambda _: 2, ter_from_stats),
)


@cache
def metric_registry() -> Registry[MetricEntry]:
    """The built-in metrics, then those of the entry-point group ``cultivar.metrics``."""
    registry: Registry[MetricEntry] = Registry("metric")
    for entry in BUILT_IN:
        registry.register(entry.name, entry)
    registry.register_entry_points(ENTRY_POINT_GROUP)
    return registry


def get_metric(name: str) -> MetricEntry:
    """The entry registered as ``name``; an entry point whose entry names itself otherwise, or
    whose attribute is no entry, is an error."""
    entry = metric_registry().get(name)
    if not isinstance(entry, StatisticsMetric | SegmentScoreMetric):
        raise TypeError(f"metric {name!r} is registered as {entry!r}, not a StatisticsMetric or "
                        "SegmentScoreMetric")
    if entry.name != name:
        raise ValueError(f"metric registered as {name!r} calls itself {entry.name!r}")
    return entry


def score_functions(metrics: Iterable[str]) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    """metric -> its entry's vectorised corpus score of summed statistics (a segment-score
    entry: the mean of statistics ``[score, 1]``), as the paired bootstrap takes them."""
    registry = metric_registry()
    metrics = list(metrics)
    unknown = [m for m in metrics if m not in registry]
    if unknown:
        raise ValueError(f"unknown metrics {unknown}; known: {', '.join(registry)}")
    return {m: get_metric(m).score_from_stats for m in metrics}


# How the paper's tables name a metric where it differs from the entry's label (its spBLEU
# columns are "BLEU").
TABLE_LABELS = {BLEU: "BLEU"}


def paper_metric_labels() -> list[tuple[str, str]]:
    """(column key, table label) of each of :data:`PAPER_METRICS`, in order: the metrics of the
    wide views' columns (:func:`cultivar_assets.tables.leaderboard_columns`)."""
    return [(column_key(name), table_label(name)) for name in PAPER_METRICS]


def table_label(name: str) -> str:
    """A metric's name in table headers: :data:`TABLE_LABELS`, else its entry's label, else the
    name itself (not registered)."""
    if name in TABLE_LABELS:
        return TABLE_LABELS[name]
    return get_metric(name).label if name in metric_registry() else name


_SIGNATURE_TOKENIZER = re.compile(r"(?:^|\|)tok:([^|]+)")


def score_label(name: str, signature: str) -> str:
    """The label of ``name``'s scores made under ``signature``: ``bleu`` is "spBLEU" when the
    signature's tokenizer (``tok:``) is a SentencePiece one (:data:`SPM_TOKENIZERS`) and "BLEU"
    otherwise (``tok:13a``, ``tok:intl``, ...); every other metric, its entry's label."""
    if name == BLEU:
        match = _SIGNATURE_TOKENIZER.search(signature)
        if match is None:
            raise ValueError(f"bleu signature {signature!r} names no tokenizer (tok:)")
        return "spBLEU" if match.group(1) in SPM_TOKENIZERS else "BLEU"
    return get_metric(name).label
