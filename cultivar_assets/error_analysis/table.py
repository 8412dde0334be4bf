"""The error analysis of paper §5 (Table 5): definitions, and what the asset reports.

Sample (:mod:`~cultivar_assets.error_analysis.sample`) → page (:mod:`~.tool`) → the annotator's
file (:mod:`~.file`) → ingest (:mod:`~.store`) → the views ``error_table5`` and
``error_correlations``, whose SQL implements these definitions:

- an annotation marks, per translation, the *set* of error types it shows
  (:mod:`~cultivar_assets.error_analysis.types`): repeated errors of one type count once (paper);
- Table 5, per model m and locale l: NE, PY, IC, NU = how many of m's annotated translations of l
  show that type; locale-specific total = NE + PY + IC + NU; general total = the same over the
  five general types; total = both; ``n_translations`` = those annotated; BLEU = m's Cultivar
  BLEU of l as in ``model_locale_deltas`` (instance-paired; the paper: "for reference");
- Pearson r per language, between BLEU and the total over every (model, locale) cell of the
  language's locales (``corr``, the sample coefficient), with every model (``r_including``) and
  without ``outlier_model`` (``r_excluding``); NULL with fewer than 3 cells. Pooling the cells is
  ours (the paper says "for Chinese"); from its own Table 5 it gives its r = −0.64 and −0.86.
"""

from __future__ import annotations

from cultivar_assets.store.database import Store


def read_table5(store: Store) -> tuple[list[dict], list[dict]]:
    """(``error_table5`` rows, ``error_correlations`` rows)."""
    return store.query("error_table5"), store.query("error_correlations")
