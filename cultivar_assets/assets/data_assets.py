"""The benchmark data as an asset: test sets, instances and the list of what is missing.

Its checks warn and block nothing: unequal instance counts and missing test sets are stated as
such wherever results are shown (every statistic carries its n)."""

from collections import Counter

import dagster as dg

from cultivar_assets.assets.safety import redacting
from cultivar_assets.data.sources import load_benchmark
from cultivar_assets.resources import DataSourceResource, StoreResource
from cultivar_assets.store.model_files import test_sets_path
from cultivar_assets.store.records import write_dataset, write_test_sets_file
from cultivar_assets.tables import md_text


@dg.asset(
    group_name="data",
    deps=["cultivar_dataset"],  # read when the data kind is built (the project's own build)
    kinds={"duckdb", "json"},
    check_specs=[
        dg.AssetCheckSpec("instance_counts", asset="test_sets",
                          description="Every locale has the same number of instances."),
        dg.AssetCheckSpec("nothing_missing", asset="test_sets",
                          description="Every expected test set could be built."),
    ],
)
@redacting
def test_sets(context: dg.AssetExecutionContext, data: DataSourceResource, store: StoreResource):
    """FLORES and Cultivar test sets (``flores_<lang>``, ``cultivar_<locale>``) in DuckDB, and as
    the file ``<storage root>/test_sets.json`` that the models' partitions read."""
    benchmark = load_benchmark(data.config())
    fingerprint = write_dataset(store.store(), benchmark)
    # the models' partitions read the test sets from the storage root, not the database
    test_sets_digest = write_test_sets_file(store.root(), benchmark)
    sets = benchmark.test_sets()
    counts = {locale: len(rows) for locale, rows in benchmark.instances.items()}
    for item in benchmark.missing:
        context.log.warning(f"missing {item.test_set}: {item.reason}")
    for note in benchmark.notes:
        context.log.warning(note)
    yield dg.MaterializeResult(
        metadata={
            "source": benchmark.source,
            "demo_data": benchmark.is_demo,
            "fingerprint": fingerprint,
            "test_sets": len(sets),
            "segments": sum(len(t.segments) for t in sets),
            "instances_per_locale": dg.MetadataValue.json(counts),
            "missing": dg.MetadataValue.md(
                "\n".join(f"- `{m.test_set}`: {m.reason}" for m in benchmark.missing) or "none"
            ),
            "notes": dg.MetadataValue.md(
                "\n".join(f"- {md_text(n)}" for n in benchmark.notes) or "none"),
            "database": dg.MetadataValue.path(str(store.store().path)),
            "test_sets_file": dg.MetadataValue.path(str(test_sets_path(store.root()))),
            "test_sets_file_digest": test_sets_digest,
        },
        data_version=dg.DataVersion(fingerprint),
    )
    distinct = Counter(counts.values())
    yield dg.AssetCheckResult(
        check_name="instance_counts",
        passed=len(distinct) == 1,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"instances_per_locale": dg.MetadataValue.json(counts)},
    )
    yield dg.AssetCheckResult(
        check_name="nothing_missing",
        passed=not benchmark.missing,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"missing": [m.test_set for m in benchmark.missing]},
    )
