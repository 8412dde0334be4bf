"""sacreBLEU's paired significance tests between stored models, per test set
(``cultivar significance``).

For each test set that every chosen model translated, :func:`paired_tests` runs
:func:`cultivar_assets.metrics.significance.paired_test` — sacreBLEU's own paired bootstrap
resampling (``bs``) or approximate randomisation (``ar``) — on the stored references and
hypotheses, the first model being the baseline. The metrics are built with the settings' metric
configuration, so the scores are the stored ones (same signature). A test set that some chosen
model did not translate is left out and named (:attr:`PairedTests.left_out`); one whose models'
segment ids or references differ is refused: they were translated from different data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

from cultivar_assets.metrics.bootstrap import SACREBLEU_DEFAULT_SEED
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.registry import PAPER_METRICS
from cultivar_assets.metrics.significance import check_samples, paired_test
from cultivar_assets.store.database import Store


class PairedTestError(ValueError):
    """The paired tests cannot be run as asked (unknown model, no common test set, ...)."""


@dataclass(frozen=True)
class PairedTests:
    rows: list[dict]  # one per (test set, metric, system): PairedTestResult's fields + test_set
    left_out: dict[str, list[str]]  # test set -> the chosen models without its translations


def _translations(store: Store, model: str) -> dict[str, list[dict]]:
    by_test_set: dict[str, list[dict]] = {}
    for row in store.query("model_references_and_hypotheses", model_id=model):
        by_test_set.setdefault(row["test_set"], []).append(row)
    return by_test_set


def paired_tests(store: Store, models: Sequence[str], config: MetricConfig | None = None,
                 metrics: Sequence[str] = PAPER_METRICS, test_sets: Sequence[str] | None = None,
                 test_type: Literal["bs", "ar"] = "bs", n_samples: int | None = None,
                 seed: int = SACREBLEU_DEFAULT_SEED) -> PairedTests:
    """Every model against ``models[0]`` on each test set (module docstring); ``test_sets``
    None: every test set all of them translated; ``n_samples`` None: sacreBLEU's default."""
    try:
        check_samples(n_samples)
    except ValueError as error:
        raise PairedTestError(str(error)) from None
    if len(models) < 2 or len(set(models)) != len(models):
        raise PairedTestError("name a baseline and at least one other model, each once")
    stored = {model: _translations(store, model) for model in models}
    unknown = [m for m, t in stored.items() if not t]
    if unknown:
        raise PairedTestError(f"no stored translations of {', '.join(unknown)}; translate them "
                              "first (cultivar run)")
    every = sorted(set().union(*(t.keys() for t in stored.values())))
    chosen = list(test_sets) if test_sets else every
    unknown_sets = [t for t in chosen if t not in every]
    if unknown_sets:
        raise PairedTestError(f"no model translated {', '.join(unknown_sets)}")
    left_out = {t: [m for m in models if t not in stored[m]] for t in chosen}
    left_out = {t: lacking for t, lacking in left_out.items() if lacking}
    if test_sets and left_out:
        raise PairedTestError("; ".join(f"{t} is not translated by {', '.join(lacking)}"
                                        for t, lacking in left_out.items()))
    common = [t for t in chosen if t not in left_out]
    if not common:
        raise PairedTestError("the models have no translated test set in common")
    rows = []
    for test_set in common:
        base = stored[models[0]][test_set]
        for model in models[1:]:
            other = stored[model][test_set]
            if ([(r["segment_id"], r["reference"]) for r in other]
                    != [(r["segment_id"], r["reference"]) for r in base]):
                raise PairedTestError(
                    f"{test_set}: {model} and {models[0]} were translated from different "
                    "segments or references; re-run them on the same data")
        systems = {m: [r["hypothesis"] for r in stored[m][test_set]] for m in models}
        for result in paired_test([r["reference"] for r in base], systems, config, test_type,
                                  n_samples, seed, metrics):
            rows.append({"test_set": test_set, **asdict(result)})
    return PairedTests(rows, left_out)
