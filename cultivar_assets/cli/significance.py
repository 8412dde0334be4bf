"""``cultivar significance BASELINE MODEL [MODEL ...]``: sacreBLEU's paired tests between stored
models, per test set (:mod:`cultivar_assets.evaluation.paired_tests`)."""

from __future__ import annotations

import argparse

from cultivar_assets.cli.common import RECORD_FORMATS, _settings, print_error, print_records

COLUMNS = ["test_set", "metric", "system", "score", "p_value", "mean", "ci", "signature"]


def _statistics_metrics(settings) -> list[str]:
    """The configured metrics (``metrics.metrics``) that sacreBLEU's paired test takes: those of
    per-segment statistics."""
    from cultivar_assets.metrics.registry import StatisticsMetric, get_metric

    return [m for m in settings.metrics.metrics if isinstance(get_metric(m), StatisticsMetric)]


def cmd_significance(args: argparse.Namespace) -> int:
    from cultivar_assets.evaluation.paired_tests import PairedTestError, paired_tests
    from cultivar_assets.store.database import Store

    settings = _settings(args)
    try:
        tests = paired_tests(Store(settings.database_path), [args.baseline, *args.models],
                             settings.metrics, args.metric or _statistics_metrics(settings),
                             args.test_set or None, args.test, args.samples, args.seed)
    except (PairedTestError, ValueError) as error:
        print_error(f"cultivar significance: {error}")
        return 1
    for test_set, lacking in tests.left_out.items():
        print_error(f"left out {test_set}: not translated by {', '.join(lacking)}")
    print_records(tests.rows, COLUMNS, args.format)
    return 0


def add_significance_parser(sub) -> None:
    from cultivar_assets.metrics.bootstrap import SACREBLEU_DEFAULT_SEED

    parser = sub.add_parser(
        "significance", help="sacreBLEU's paired tests of stored models against a baseline, per "
        "test set (docs/metrics.md, Paired tests)")
    parser.add_argument("baseline", help="the baseline model id")
    parser.add_argument("models", nargs="+", help="the model ids compared with it")
    parser.add_argument("--test-set", action="append",
                        help="a test set (repeat; default: every one all models translated)")
    parser.add_argument("--metric", action="append",
                        help="a metric of the registry's statistics kind (repeat; default: "
                             "the configured metrics of that kind)")
    parser.add_argument("--test", choices=("bs", "ar"), default="bs",
                        help="paired bootstrap resampling (bs, default) or approximate "
                             "randomisation (ar)")
    parser.add_argument("--samples", type=int, default=None,
                        help="resamples (bs) or trials (ar), at least 1 (default: sacreBLEU's, "
                             "1,000 / 10,000)")
    parser.add_argument("--seed", type=int, default=SACREBLEU_DEFAULT_SEED,
                        help=f"sacreBLEU's seed ({SACREBLEU_DEFAULT_SEED})")
    parser.add_argument("--database", help="DuckDB file to read (default: the settings' "
                        "database)")
    parser.add_argument("--format", choices=RECORD_FORMATS, default="table",
                        help="table, csv, json or markdown (default: table)")
    parser.set_defaults(func=cmd_significance)
