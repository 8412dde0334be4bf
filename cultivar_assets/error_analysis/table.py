"""The error analysis of paper §5 (Table 5): definitions, and what the asset reports.

Pipeline: :mod:`~cultivar_assets.error_analysis.sample` (the seeded sample, one task per
locale) → :mod:`~cultivar_assets.error_analysis.tool` (the static annotation page) → the
annotator's downloaded file → :mod:`~cultivar_assets.error_analysis.file` (validation) →
:mod:`~cultivar_assets.error_analysis.store` (ingest) → the views ``error_table5`` and
``error_correlations``.

Definitions (the SQL of the views implements them):

- an annotation marks, per translation, the *set* of error types it shows
  (:mod:`~cultivar_assets.error_analysis.types`): repeated errors of one type in an instance
  count once, different types separately (the paper);
- Table 5, per model m and locale l: NE, PY, IC, NU = how many of m's annotated translations of l
  show that type; locale-specific total = NE + PY + IC + NU; general total = the same sum over
  the five general types; total = both; ``n_translations`` = the translations annotated; BLEU =
  m's Cultivar BLEU of l as in ``model_locale_deltas`` (instance-paired, the leaderboard's
  signature; the paper gives BLEU "for reference");
- Pearson r per language: over every (model, locale) cell of the language's locales in Table 5,
  r between BLEU and the total (``corr`` in DuckDB, the sample Pearson coefficient); once with
  every model (``r_including``) and once without the configured ``outlier_model``
  (``r_excluding``). Pooling the cells (ours; the paper says "for Chinese") reproduces the
  paper's r_incl = −0.64 and r_excl = −0.86 from its own Table 5 (10 models × 3 locales, without
  Seed-X-PPO-7B); undefined (NULL) with fewer than 3 cells.
"""

from __future__ import annotations

from cultivar_assets.store.database import Store


def read_table5(store: Store) -> tuple[list[dict], list[dict]]:
    """(``error_table5`` rows, ``error_correlations`` rows)."""
    return store.query("error_table5"), store.query("error_correlations")
