"""Model-against-model paired tests on one test set: sacreBLEU's own code.

:func:`paired_test` runs ``sacrebleu.significance.PairedTest`` — paired bootstrap resampling
(``"bs"``, Koehn 2004, as Moses' ``bootstrap-hypothesis-difference-significance.pl``) or
approximate randomisation (``"ar"``, Riezler and Maxwell 2005) — on the metric objects this
project scores with (the entries of :mod:`cultivar_assets.metrics.registry`), so that a test
between, say, two adjacent models on one locale is sacreBLEU's and not a re-implementation. The
first system is the baseline; every other system is compared with it.

sacreBLEU reads its seed from the environment variable ``SACREBLEU_SEED`` (default 12345) when
the test is built and again inside its bootstrap; :func:`paired_test` sets it for the duration of
the call and restores it. Seed 0 is refused: sacreBLEU's test then runs unseeded.

How :mod:`cultivar_assets.metrics.bootstrap` relates to it: for one test set with instance ids
``0..n−1`` (or any n ids, in sorted order) the bootstrap draws exactly sacreBLEU's resampling
indices (``numpy.random.default_rng(seed).choice(n, size=(B, n))``), so its replicate scores are
sacreBLEU's, except that sacreBLEU casts statistics to float32 before summing and so computes
precisions in float32 (differences of order 1e-5 BLEU/chrF points); we sum integers exactly. The
test suite checks sacreBLEU's mean, confidence half-width and p-value against figures computed
from our replicates.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from cultivar_assets.metrics.bootstrap import SACREBLEU_DEFAULT_SEED
from cultivar_assets.metrics.configured import build_statistics
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.registry import metric_registry


@dataclass(frozen=True)
class PairedTestResult:
    system: str
    metric: str  # a registered metric of statistics: 'bleu', 'chrf', 'chrf++', 'ter'
    score: float
    p_value: float | None  # None for the baseline
    mean: float | None  # bootstrap mean (bs; ar with confidence resamples)
    ci: float | None  # half-width of sacreBLEU's 95 % interval around ``mean``
    signature: str  # sacreBLEU's test signature (with seed and test type)


@contextmanager
def _sacrebleu_seed(seed: int) -> Iterator[None]:
    previous = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(seed)
    try:
        yield
    finally:
        if previous is None:
            del os.environ["SACREBLEU_SEED"]
        else:
            os.environ["SACREBLEU_SEED"] = previous


def _number(value) -> float | None:
    """sacreBLEU's NumPy float32 figures as Python floats (the same values), None kept."""
    return None if value is None else float(value)


def check_samples(n_samples: int | None) -> None:
    """Refuse a number of resamples or trials below 1 (None: sacreBLEU's default). sacreBLEU
    reads 0 as its default and runs a negative number as no resample at all."""
    if n_samples is not None and (isinstance(n_samples, bool) or n_samples < 1):
        raise ValueError(f"{n_samples} resamples or trials: expected a whole number of at least 1 "
                         "(leave it out for sacreBLEU's default)")


def paired_test(
    references: Sequence[str],
    systems: Mapping[str, Sequence[str]],
    config: MetricConfig | None = None,
    test_type: Literal["bs", "ar"] = "bs",
    n_samples: int | None = None,
    seed: int = SACREBLEU_DEFAULT_SEED,
    metrics: Sequence[str] | None = None,
) -> list[PairedTestResult]:
    """sacreBLEU's paired test of every system against the first (the baseline).

    ``metrics`` default: the settings' (``config.metrics``). ``n_samples`` None takes
    sacreBLEU's default (1,000 resamples for bs, 10,000 trials for ar); otherwise at least 1.
    """
    from sacrebleu.significance import PairedTest

    check_samples(n_samples)
    if seed == 0:
        raise ValueError("seed 0 makes sacreBLEU's paired test unseeded; choose another seed")
    if len(systems) < 2:
        raise ValueError("a paired test needs a baseline and at least one other system")
    n = len(references)
    for name, hyps in systems.items():
        if len(hyps) != n:
            raise ValueError(f"{name}: {len(hyps)} hypotheses for {n} references")
    metrics = list((config or MetricConfig()).metrics if metrics is None else metrics)
    unknown = [m for m in metrics if m not in metric_registry()]
    if unknown:
        raise ValueError(f"unknown metrics {unknown}; known: {', '.join(metric_registry())}")
    chosen = {m: built.metric for m, built in build_statistics(config, metrics).items()}
    with _sacrebleu_seed(seed):
        test = PairedTest([(name, list(hyps)) for name, hyps in systems.items()], chosen,
                          references=[list(references)], test_type=test_type,
                          n_samples=n_samples or 0, n_jobs=1)  # 0: sacreBLEU's default
        signatures, table = test()
    # sacreBLEU renames the metrics by their score names ('BLEU', 'chrF2'), in the given order
    names = [k for k in table if k != "System"]
    results = []
    for metric, name in zip(metrics, names, strict=True):
        for system, result in zip(table["System"], table[name], strict=True):
            results.append(PairedTestResult(system, metric, float(result.score),
                                            _number(result.p_value), _number(result.mean),
                                            _number(result.ci), signatures[name].format()))
    return results
