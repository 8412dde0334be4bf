"""BLEU and chrF corpus scores of many summed statistics at once (NumPy re-implementation).

sacreBLEU turns one vector of summed sufficient statistics into a score with
``BLEU._compute_score_from_stats`` / ``CHRF._compute_score_from_stats``, one Python call per
vector. A bootstrap needs millions of them (models × test sets × replicates), so this module
re-implements the two formulas on arrays whose last axis holds the statistics; every other axis
is kept. Every score equals sacreBLEU's bit for bit: tests compare both functions with
sacreBLEU's own methods (``==``) on many random vectors and on real corpus statistics.

**BLEU** (sacreBLEU ``BLEU()`` defaults: ``smooth_method="exp"``, ``effective_order=False``,
``max_ngram_order=4``). Statistics ``[sys_len, ref_len, correct_1..4, total_1..4]``:

- ``BP = 1`` if ``sys_len >= ref_len``; ``exp(1 − ref_len / sys_len)`` if ``0 < sys_len <
  ref_len``; ``0`` if ``sys_len = 0``;
- a score of 0 when every ``correct_n`` is 0;
- orders are used up to (excluding) the first ``n`` with ``total_n = 0``: that order and all
  later ones keep precision 0;
- for a used order, ``p_n = 100 · correct_n / total_n``; when ``correct_n = 0`` the "exp"
  (NIST) smoothing gives ``p_n = 100 / (2^k · total_n)``, where ``k`` counts the used orders
  ``≤ n`` with zero matches ("none" smoothing leaves ``p_n = 0``);
- ``BLEU = BP · exp(Σ_{n=1..N} log*(p_n) / N)`` with ``log*(0) = −9999999999`` (sacreBLEU's
  ``my_log``) and ``N = 4``; with ``effective_order`` ``N`` is the number of used orders.

**chrF** (sacreBLEU ``CHRF()`` defaults: β = 2, ``eps_smoothing=False``). Statistics
``[hyp_1, ref_1, match_1, hyp_2, ...]``, one triple per order (6 character orders, then word
orders for chrF++):

- an order counts only when ``hyp_n > 0`` and ``ref_n > 0``; for those,
  ``P_n = match_n / hyp_n``, ``R_n = match_n / ref_n``;
- ``P`` and ``R`` are the means of ``P_n`` and ``R_n`` over the counted orders (0 when none);
- ``chrF = 100 · (1 + β²) · P · R / (β² · P + R)``, and 0 when ``P + R = 0``.

Operations are done in sacreBLEU's order, in float64. Bit-for-bit equality needs three more
things, all in BLEU (chrF is plain arithmetic):

- ``log`` and ``exp`` are the C library's, which ``math.log``/``math.exp`` call; NumPy's own
  SIMD ``np.exp`` differs from them by an ulp in about 5 % of inputs (and ``np.log`` in a few
  in 10,000). :func:`c_log` and :func:`c_exp` reach the C library's functions through SciPy's
  ufuncs (``xlogy(1, x) = 1 · log(x)``, ``inv_boxcox(y, 0) = exp(y)``), at C speed;
- ``2^k`` is built exactly (``ldexp``);
- the sum of the ``log p_n`` is Python's ``sum()``: left to right before Python 3.12, Neumaier's
  compensated sum from 3.12 on (:func:`python_sum`).
"""

from __future__ import annotations

import sys

import numpy as np
from scipy.special import inv_boxcox, xlogy

BLEU_ORDER = 4
BLEU_WIDTH = 2 + 2 * BLEU_ORDER
CHRF_BETA = 2
_MY_LOG_ZERO = -9999999999.0  # sacreBLEU's my_log(0)


def bleu_from_stats(
    stats: np.ndarray, smooth_method: str = "exp", effective_order: bool = False
) -> np.ndarray:
    """BLEU of summed statistics ``stats[..., 10]``; returns an array of shape ``stats[..., 0]``."""
    stats = np.asarray(stats, dtype=np.float64)
    if stats.shape[-1] != BLEU_WIDTH:
        raise ValueError(f"BLEU statistics have {BLEU_WIDTH} columns, not {stats.shape[-1]}")
    if smooth_method not in ("exp", "none"):
        raise ValueError(f"smooth_method {smooth_method!r} is not implemented (exp, none)")
    sys_len = stats[..., 0]
    ref_len = stats[..., 1]
    correct = stats[..., 2:2 + BLEU_ORDER]
    total = stats[..., 2 + BLEU_ORDER:]

    with np.errstate(divide="ignore", invalid="ignore"):
        bp = np.where(sys_len >= ref_len, 1.0,
                      np.where(sys_len > 0, c_exp(1 - ref_len / sys_len), 0.0))
        used = np.logical_and.accumulate(total != 0, axis=-1)  # orders before the first 0 total
        zero_match = used & (correct == 0)
        if smooth_method == "exp":
            halvings = np.cumsum(zero_match, axis=-1)
            smoothed = 100.0 / (np.ldexp(1.0, halvings) * total)
        else:
            smoothed = np.zeros_like(total)
        precision = np.where(used, np.where(correct == 0, smoothed, 100.0 * correct / total), 0.0)
        logs = np.where(precision == 0, _MY_LOG_ZERO, c_log(precision))
    if effective_order:
        n_used = used.sum(axis=-1)
        order = np.where(n_used == 0, BLEU_ORDER, n_used)
        mask = np.arange(1, BLEU_ORDER + 1) <= order[..., None]
        log_sum = python_sum(np.where(mask, logs, 0.0))  # adding 0.0 changes no sum
    else:
        order = np.full(sys_len.shape, BLEU_ORDER)
        log_sum = python_sum(logs)
    score = bp * c_exp(log_sum / order)
    return np.where((correct != 0).any(axis=-1), score, 0.0)


def chrf_from_stats(stats: np.ndarray, beta: int = CHRF_BETA) -> np.ndarray:
    """chrF of summed statistics ``stats[..., 3 · orders]``; returns ``stats[..., 0]``'s shape."""
    stats = np.asarray(stats, dtype=np.float64)
    if stats.shape[-1] == 0 or stats.shape[-1] % 3:
        raise ValueError(f"chrF statistics come in triples; got {stats.shape[-1]} columns")
    factor = beta ** 2
    hyp = stats[..., 0::3]
    ref = stats[..., 1::3]
    match = stats[..., 2::3]
    counted = (hyp > 0) & (ref > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(counted, match / hyp, 0.0)
        recall = np.where(counted, match / ref, 0.0)
    n_counted = counted.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        avg_p = np.where(n_counted > 0, _sequential_sum(precision) / n_counted, 0.0)
        avg_r = np.where(n_counted > 0, _sequential_sum(recall) / n_counted, 0.0)
        score = (1 + factor) * avg_p * avg_r / (factor * avg_p + avg_r)
    return np.where(avg_p + avg_r != 0, 100 * score, 0.0)


def _sequential_sum(values: np.ndarray) -> np.ndarray:
    """Sum over the last axis from left to right, as sacreBLEU's Python loops add."""
    total = np.zeros(values.shape[:-1])
    for i in range(values.shape[-1]):
        total = total + values[..., i]
    return total


def c_log(values: np.ndarray) -> np.ndarray:
    """Natural log of every element by the C library's ``log`` (what ``math.log`` returns)."""
    return xlogy(1.0, values)


def c_exp(values: np.ndarray) -> np.ndarray:
    """``e^x`` of every element by the C library's ``exp`` (what ``math.exp`` returns)."""
    return inv_boxcox(values, 0.0)


def python_sum(values: np.ndarray, compensated: bool | None = None) -> np.ndarray:
    """Python's ``sum()`` of floats over the last axis, every other axis kept.

    Before Python 3.12 ``sum()`` adds left to right; from 3.12 on it keeps Neumaier's
    compensation ``c`` (for each ``x``: ``t = s + x``; ``c += (s − t) + x`` if ``|s| ≥ |x|``,
    else ``(x − t) + s``; ``s = t``) and returns ``s + c`` when ``c`` is finite and not 0.
    ``compensated`` chooses one (default: the running interpreter's).
    """
    if compensated is None:
        compensated = sys.version_info >= (3, 12)
    if not compensated:
        return _sequential_sum(values)
    total = np.zeros(values.shape[:-1])
    compensation = np.zeros(values.shape[:-1])
    for i in range(values.shape[-1]):
        x = values[..., i]
        t = total + x
        compensation = compensation + np.where(np.abs(total) >= np.abs(x),
                                               (total - t) + x, (x - t) + total)
        total = t
    keep = (compensation != 0) & np.isfinite(compensation)
    return np.where(keep, total + compensation, total)
