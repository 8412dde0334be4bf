"""BLEU and chrF of the Scorer equal the sacreBLEU command line on the same files."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest
from metrics_helpers import ALPHABETS, perturb, random_sentence

from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.scoring import Scorer


def cli_scores(tmp_path, refs, hyps, *extra: str) -> list[dict]:
    ref_file, hyp_file = tmp_path / "ref.txt", tmp_path / "hyp.txt"
    ref_file.write_text("\n".join(refs) + "\n", encoding="utf-8")
    hyp_file.write_text("\n".join(hyps) + "\n", encoding="utf-8")
    env = {**os.environ, "SACREBLEU": str(tmp_path / "sacrebleu_home")}
    result = subprocess.run(
        [sys.executable, "-m", "sacrebleu", str(ref_file), "-i", str(hyp_file),
         "-m", "bleu", "chrf", "--chrf-word-order", "0", "-tok", "13a", "-f", "json", *extra],
        capture_output=True, text=True, encoding="utf-8", env=env, timeout=60, check=True,
    )
    return json.loads(result.stdout)


def corpus(seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    alphabet = ALPHABETS["ascii"] + ALPHABETS["accented"] + ALPHABETS["cjk"] + ",.!?"
    refs = [random_sentence(rng, alphabet).strip() or "x" for _ in range(40)]
    hyps = [perturb(rng, ref, alphabet).strip() for ref in refs]
    hyps[3] = refs[3]
    hyps[5] = ""
    # the CLI reads line by line and rstrips: keep every line single-line and rstripped
    for line in refs + hyps:
        assert "\n" not in line and "\r" not in line and line == line.rstrip()
    return refs, hyps


@pytest.mark.parametrize("width", [None, 6])
def test_scores_equal_sacrebleu_cli(tmp_path, width):
    refs, hyps = corpus(seed=2024)
    extra = () if width is None else ("-w", str(width))
    out = cli_scores(tmp_path, refs, hyps, *extra)
    by_name = {entry["name"]: entry for entry in out}
    assert set(by_name) == {"BLEU", "chrF2"}

    scorer = Scorer(MetricConfig(bleu_tokenize="13a", chrf_word_order=0))
    [bleu, chrf] = scorer.score_test_set("t", refs, {"s": hyps})
    assert (bleu.metric, chrf.metric) == ("bleu", "chrf")
    # the CLI prints float(f"{score:.{width}f}"), width 1 by default
    digits = 1 if width is None else width
    assert by_name["BLEU"]["score"] == float(f"{bleu.score:.{digits}f}")
    assert by_name["chrF2"]["score"] == float(f"{chrf.score:.{digits}f}")
    # the signatures name the same settings
    assert by_name["BLEU"]["signature"] == bleu.signature
    assert by_name["chrF2"]["signature"] == chrf.signature
    # and the scores are not trivial
    assert 5 < bleu.score < 95 and 5 < chrf.score < 95
