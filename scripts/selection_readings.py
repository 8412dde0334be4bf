"""The candidates of the selection under each reading of the paper's exclusion rules (§2.1).

Runs spaCy NER once over the English side of FLORES dev (``../shared/data/flores200``, or
``--flores``) with the default selection, then evaluates the exclusion rules again under each
reading of :data:`READINGS` (the rule code of ``construction/selection/rules.py``, other settings
overridden) and prints, per reading, the sentences with ≥ 1 and ≥ 2 counted entities, the
candidates, and which of the instances shown in the paper's Figure 1 are not candidates; then
which of those the defaults' choice (n = 200, hash order) picks. The table of readings in
``docs/building-a-benchmark.md`` comes from it.

    python scripts/selection_readings.py [--flores DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cultivar_assets.construction.config import (
    DEFAULT_EXCLUDED_TOPICS,
    NUMERIC_LABELS,
    SelectionConfig,
)
from cultivar_assets.construction.selection.choice import (
    SelectionResult,
    counted_labels,
    order_key,
    select_instances,
)
from cultivar_assets.construction.selection.entities import SpacyRecogniser
from cultivar_assets.construction.selection.rules import PAPER_FIGURE_1_IDS, evaluate_rules
from cultivar_assets.data.source_benchmark import SourceBenchmarkConfig, load_source_benchmark

DEFAULT_FLORES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "flores200"
WITH_HEALTH = [*DEFAULT_EXCLUDED_TOPICS, "health"]
NAME_LABELS = ["EVENT", "FAC", "GPE", "LANGUAGE", "LAW", "LOC", "NORP", "ORG", "PERSON", "PRODUCT",
               "WORK_OF_ART"]  # the labels of the default pipeline that are not NUMERIC_LABELS

# (what the reading says, the selection settings that make it)
READINGS: list[tuple[str, dict[str, Any]]] = [
    ("numeric label, share > 0.5; with \"health\" (before)",
     {"numeral_mentions": "label", "excluded_topics": WITH_HEALTH}),
    ("numeric label, share ≥ 0.5; with \"health\"",
     {"numeral_mentions": "label", "excluded_topics": WITH_HEALTH,
      "max_numeral_share": 0.4999}),
    ("numeric label, share > 0.5; without \"health\"", {"numeral_mentions": "label"}),
    ("non-numeric labels counted (≥ 2 names); numeric label, share > 0.5; without \"health\"",
     {"numeral_mentions": "label", "counted_labels": NAME_LABELS}),
    ("numeric label, share > 2/3; without \"health\"",
     {"numeral_mentions": "label", "max_numeral_share": 0.6667}),
    ("numeric label and a numeral, share > 0.5; with \"health\"",
     {"excluded_topics": WITH_HEALTH}),
    ("numeric label and a numeral, share > 0.5; the paper's words only (medicine, science)",
     {"excluded_topics": ["medicine", "science"]}),
    ("numeric label and a numeral, share > 0.5; without \"health\" (the defaults)", {}),
    ("numeric label and a numeral, share > 0.5; no topic rule", {"rules": ["numeral_share"]}),
    ("no rules", {"rules": []}),
]


def measure(result: SelectionResult, config: SelectionConfig) -> tuple[int, int, set[int]]:
    """Under ``config``: the sentences with ≥ 1 and ≥ ``min_entities`` counted entities, and the
    ids of the candidates (enough counted entities, no rule of ``config`` excludes them)."""
    labels = set(counted_labels(config, result.ner))
    with_one, enough, ids = 0, 0, set()
    for inst in result.instances:
        counted = sum(1 for e in inst.entities if not e.removed and e.label in labels)
        with_one += counted >= 1
        if counted >= config.min_entities:
            enough += 1
            rules = evaluate_rules(inst.entities, inst.topic_terms, config)
            if not any(outcome.excluded for outcome in rules):
                ids.add(inst.instance_id)
    return with_one, enough, ids


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flores", default=str(DEFAULT_FLORES))
    args = parser.parse_args()
    if not (Path(args.flores) / "dev" / "eng_Latn.dev").is_file():
        print(f"no FLORES-200 release at {args.flores}", file=sys.stderr)
        return 2
    benchmark = load_source_benchmark(SourceBenchmarkConfig(kind="flores", path=args.flores))
    defaults = SelectionConfig(n=None)
    recogniser = SpacyRecogniser(defaults.pipeline, defaults.batch_size)
    result = select_instances(benchmark, defaults, recogniser)
    assert set(NAME_LABELS) == set(result.ner.labels) - set(NUMERIC_LABELS), result.ner.labels
    print(f"FLORES dev ({len(result.instances)} sentences), {result.ner.pipeline} "
          f"{result.ner.pipeline_version}, spaCy {result.ner.spacy_version}, no corrections; "
          f"every label counted unless the reading says otherwise\n")
    print("| reading (numerals; topic words) | ≥ 1 entity | ≥ 2 | candidates "
          "| Figure 1 instances not candidates |")
    print("|---|---|---|---|---|")
    for name, overrides in READINGS:
        config = SelectionConfig.model_validate({**defaults.model_dump(), **overrides})
        with_one, enough, ids = measure(result, config)
        missing = [i for i in PAPER_FIGURE_1_IDS if i not in ids]
        print(f"| {name} | {with_one} | {enough} | {len(ids)} "
              f"| {', '.join(map(str, missing)) or 'none'} |")
    chosen = SelectionConfig()  # the defaults: n = 200 in hash order
    ranked = sorted((i for i in result.instances if i.candidate),
                    key=lambda inst: order_key(chosen, inst))[:chosen.n]
    picked = [i for i in PAPER_FIGURE_1_IDS if i in {inst.instance_id for inst in ranked}]
    print(f"\nthe defaults choose {len(ranked)} in {chosen.order} order (seed {chosen.seed!r}); "
          f"of the Figure 1 instances: {', '.join(map(str, picked)) or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
