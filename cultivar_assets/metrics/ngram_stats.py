"""Vectorised n-gram match statistics, identical to sacreBLEU's per-segment statistics.

sacreBLEU computes, for every segment, counts of hypothesis n-grams, reference n-grams and their
clipped matches, with Python ``Counter`` objects. This module computes the same integers for many
hypotheses at once with NumPy: every text becomes an array of unit ids (characters for chrF,
tokens for BLEU); an n-gram is encoded exactly as an integer (``code_n = code_{n-1} * A + unit``,
re-numbered densely whenever the next multiplication could overflow), and counts come from sorting
``(row, code)`` keys. No hashing is involved, so there are no collisions: the result is exact.

For order ``n``, segment hypothesis ``h`` and its reference ``r`` (one reference per segment):

- ``hyp_count_n = max(len(h) - n + 1, 0)``, ``ref_count_n = max(len(r) - n + 1, 0)``
- ``match_n = sum over distinct n-grams g of min(count_h(g), count_r(g))``

Tests compare the result with sacreBLEU's own ``_extract_corpus_statistics`` on random text.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_LIMIT = 1 << 62


def char_unit_ids(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, int]:
    """Code points of all texts as dense ids: (ids, lengths, alphabet size)."""
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    joined = "".join(texts)
    if not joined:
        return np.zeros(0, dtype=np.int64), lengths, 1
    # surrogatepass: a lone surrogate is a valid str (e.g. from JSON) and sacreBLEU counts it
    points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    alphabet, ids = np.unique(points, return_inverse=True)
    return ids.astype(np.int64, copy=False), lengths, len(alphabet)


def token_unit_ids(token_lists: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray, int]:
    """Tokens of all texts as dense ids: (ids, lengths, vocabulary size)."""
    lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
    tokens = [token for tokens in token_lists for token in tokens]
    if not tokens:
        return np.zeros(0, dtype=np.int64), lengths, 1
    # ids in order of first appearance, from a dict (hash-based, in C; no pandas to load)
    vocabulary = {token: i for i, token in enumerate(dict.fromkeys(tokens))}
    ids = np.fromiter(map(vocabulary.__getitem__, tokens), dtype=np.int64, count=len(tokens))
    return ids, lengths, len(vocabulary)


def match_statistics(
    ids: np.ndarray,
    lengths: np.ndarray,
    alphabet: int,
    n_refs: int,
    hyp_segment: np.ndarray,
    max_order: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per hypothesis row and order: (hyp_count, ref_count, match), each ``(n_hyps, max_order)``.

    ``ids``/``lengths`` hold the references first (row ``i`` is the reference of segment ``i``),
    then the hypotheses; ``hyp_segment[j]`` is the segment of hypothesis row ``j``.
    """
    n_rows = len(lengths)
    n_hyps = n_rows - n_refs
    hyp_segment = np.asarray(hyp_segment, dtype=np.int64)
    hyp_lengths = lengths[n_refs:]
    ref_lengths = lengths[:n_refs][hyp_segment]
    orders = np.arange(1, max_order + 1)
    hyp_count = np.maximum(hyp_lengths[:, None] - orders + 1, 0)
    ref_count = np.maximum(ref_lengths[:, None] - orders + 1, 0)
    match = np.zeros((n_hyps, max_order), dtype=np.int64)
    if len(ids) == 0:
        return hyp_count, ref_count, match

    ends = np.cumsum(lengths)
    row_of = np.repeat(np.arange(n_rows, dtype=np.int64), lengths)
    end_of = ends[row_of]
    position = np.arange(len(ids), dtype=np.int64)
    code = ids
    bound = alphabet  # every value of ``code`` is < bound
    for n in orders:
        if n > 1:
            if bound * alphabet >= _LIMIT:
                _, code = np.unique(code, return_inverse=True)
                bound = int(code.max()) + 1 if len(code) else 1
            code = code[:-1] * alphabet + ids[n - 1 :]
            bound *= alphabet
        size = len(code)
        valid = position[:size] + n <= end_of[:size]
        rows = row_of[:size][valid]
        codes = code[valid]
        key_bound = bound
        if key_bound * n_rows >= _LIMIT:
            _, codes = np.unique(codes, return_inverse=True)
            key_bound = int(codes.max()) + 1 if len(codes) else 1
        keys = rows * key_bound + codes
        n_ref_keys = int(np.searchsorted(rows, n_refs))  # references come first
        ref_keys, ref_counts = np.unique(keys[:n_ref_keys], return_counts=True)
        hyp_keys, hyp_counts = np.unique(keys[n_ref_keys:], return_counts=True)
        if len(ref_keys) == 0 or len(hyp_keys) == 0:
            continue
        hyp_rows = hyp_keys // key_bound - n_refs
        lookup = hyp_segment[hyp_rows] * key_bound + hyp_keys % key_bound
        where = np.minimum(np.searchsorted(ref_keys, lookup), len(ref_keys) - 1)
        clipped = np.where(ref_keys[where] == lookup, np.minimum(hyp_counts, ref_counts[where]), 0)
        match[:, n - 1] = np.bincount(hyp_rows, weights=clipped, minlength=n_hyps).astype(np.int64)
    return hyp_count, ref_count, match
