"""Regenerate the demo localiser's recorded answers and the shipped demo annotation files.

    python scripts/regenerate_demo_annotations.py            # write the files
    python scripts/regenerate_demo_annotations.py --check    # compare only; exit 1 on a difference

Runs the demo's construction half with the demo settings and the weak demo localiser *live*
(selection over the demo's original sentences, Gemma 3 270M on the CPU: ``construction/config.py``,
``demo_localisation(live=True)``; ~6 minutes on 2 cores) in a temporary folder (database and
selection review page: the demo's outputs under ``$CULTIVAR_HOME`` are left alone); answers come
from the localisation cache under ``$CULTIVAR_HOME`` when they are there. Then writes the
recording that ``cultivar demo`` plays back (``cultivar_assets/construction/
demo_localiser_answers.json``, engine ``replay``) and
``cultivar_assets/data/demo/annotations/<task_id>.annotations.json`` for each demo locale: the
drafts as they are, the bundled demo data as the final pairs (``construction/annotation/demo.py``),
and prints how far the drafts are from those pairs. Review the difference (``git diff``) and
commit the files with the change that moved the drafts.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from cultivar_assets.construction.annotation.demo import (
    demo_annotation_document,
    demo_finals,
    environment,
    record_localiser_answers,
    write_demo_annotations,
)
from cultivar_assets.construction.annotation.postedit_build import stored_task
from cultivar_assets.construction.build import build_localisation, build_selection
from cultivar_assets.construction.config import (
    DEMO_LOCALISER_ANSWERS,
    demo_annotations_dir,
    demo_construction,
)
from cultivar_assets.engines.replay import recording_path
from cultivar_assets.store.database import Store


def _answers(path: Path) -> list:
    """A recording's answers (what it was recorded with may differ: that is no difference)."""
    return json.loads(path.read_text("utf-8"))["answers"]


def draft_quality(task) -> dict:
    """How the drafts compare with the demo's final pairs: counts and mean sentence chrF."""
    from sacrebleu.metrics import CHRF

    chrf = CHRF()
    finals = demo_finals(task.locale)
    parsed = [d for d in task.drafts if not d.flagged]

    def mean(side: str) -> float | None:
        scores = [chrf.sentence_score(getattr(d, f"{side}_draft"),
                                      [finals[d.instance_id][f"{side}_localised"]]).score
                  for d in parsed]
        return sum(scores) / len(scores) if scores else None
    return {
        "drafts": len(task.drafts), "flagged": len(task.drafts) - len(parsed),
        "unchanged": sum((d.source_draft, d.english_draft)
                         == (d.source_original, d.english_original) for d in parsed),
        "equal_to_final": sum((d.source_draft, d.english_draft) == (
            finals[d.instance_id]["source_localised"],
            finals[d.instance_id]["english_localised"]) for d in parsed),
        "chrf_source": mean("source"), "chrf_english": mean("english"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped files "
                        "instead of writing them")
    parser.add_argument("--folder", type=Path, default=demo_annotations_dir(),
                        help="where the files go (default: the shipped folder)")
    args = parser.parse_args(argv)
    construction = demo_construction(live_localiser=True)
    started = time.perf_counter()
    answers = recording_path(DEMO_LOCALISER_ANSWERS)
    with tempfile.TemporaryDirectory() as work:
        store = Store(Path(work) / "demo.duckdb")
        selection = construction.selection.model_copy(  # its review page too: not the demo's
            update={"review_dir": str(Path(work) / "selection")})
        build_selection(construction.source, selection, store, show_bar=False)
        run = build_localisation(construction.localisation, store, say=print).run
        tasks = [stored_task(store, locale) for locale in construction.localisation.locale_keys()]
        recorded = Path(work) / answers.name
        record_localiser_answers(store, construction.localisation, recorded)
        same_answers = _answers(recorded) == _answers(answers) if answers.is_file() else False
        if not args.check:
            shutil.copyfile(recorded, answers)
            print(f"wrote {answers}")
    print(f"localised {sum(len(t.drafts) for t in tasks)} drafts in "
          f"{time.perf_counter() - started:.1f} s ({run.n_generated if run else 0} generated, "
          "the rest cached)")
    for task in tasks:
        quality = draft_quality(task)
        print(f"{task.locale}: " + ", ".join(
            f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in quality.items()))
    if args.check:
        differ = []
        for task in tasks:
            path = args.folder / f"{task.task_id}.annotations.json"
            expected = json.dumps(demo_annotation_document(task), ensure_ascii=False, indent=1)
            if not path.is_file() or path.read_text("utf-8") != expected + "\n":
                differ.append(task.locale)
        if differ or not same_answers:
            what = [f"the shipped demo annotation files differ for {', '.join(differ)}"] * bool(
                differ) + [f"the recorded answers ({answers.name}) differ"] * (not same_answers)
            print(f"{'; '.join(what)}: run python scripts/regenerate_demo_annotations.py and "
                  "commit the files", file=sys.stderr)
            return 1
        print("the recorded answers and the shipped demo annotation files match the model's "
              "answers now")
        return 0
    for path in write_demo_annotations(tasks, args.folder, generated_with=environment()):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
