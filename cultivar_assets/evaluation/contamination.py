"""The contamination rules on the paper's reported Table 3.

The rules (:mod:`cultivar_assets.metrics.flags`) are applied to the evaluated models by the
aggregation (with intervals, :mod:`cultivar_assets.evaluation.statistics`); here the same rules,
with the same configuration, are applied to the figures the paper reports for its 32 models
(``reported:`` in the model registry). Reported figures have no intervals and no per-locale ∆:
the ∆ and FP outlier rules compare point estimates (the row's ``note`` says so) and the share of
negative locales cannot be applied (``applied`` false, with the reason). The rows go to
``contamination_flags`` with ``source = 'reported'``, replaced as a whole, kept apart from the
evaluated ones.
"""

from __future__ import annotations

from collections.abc import Sequence

from cultivar_assets.metrics.flags import (
    FlagConfig,
    RuleResult,
    apply_flags,
    evidence_from_reported,
    flag_rows,
)
from cultivar_assets.metrics.registry import table_label
from cultivar_assets.specs import ModelSpec
from cultivar_assets.store.database import Store, WriteBlock


def reported_flags(specs: Sequence[ModelSpec], config: FlagConfig | None = None
                   ) -> list[RuleResult]:
    """The rules applied to the registry entries that carry reported figures."""
    reported = {spec.id: spec.reported for spec in specs if spec.reported is not None}
    return (apply_flags(evidence_from_reported(reported), config, label=table_label)
            if reported else [])


def write_reported_flags(store: Store, specs: Sequence[ModelSpec],
                         config: FlagConfig | None = None) -> list[RuleResult]:
    """Replace the stored outcomes of the rules on the reported figures; returns them."""
    results = reported_flags(specs, config)
    rows = [{"source": "reported", **row} for row in flag_rows(results)]
    store.write([WriteBlock("delete_reported_flags"),
                 WriteBlock("insert_contamination_flags", rows=rows)])
    return results
