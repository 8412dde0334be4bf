"""sacrebleu_metrics: missing spBLEU model, explicit tokenizers, a stand-in SentencePiece model."""

from __future__ import annotations

import hashlib
import random
import re
import shutil

import pytest
from metrics_helpers import SPM_WORDS, english_lines, train_tiny_spm
from pydantic import ValidationError

from cultivar_assets.metrics import sacrebleu_metrics
from cultivar_assets.metrics.configured import build_metrics
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.sacrebleu_metrics import (
    MetricUnavailableError,
    sacrebleu_dir,
    spm_model_location,
)
from cultivar_assets.metrics.scoring import Scorer


@pytest.fixture(autouse=True)
def isolated_sacrebleu_home(tmp_path, monkeypatch):
    """$SACREBLEU in tmp_path, and any download attempt fails loudly."""
    home = tmp_path / "sacrebleu_home"
    monkeypatch.setenv("SACREBLEU", str(home))

    def no_download(*args, **kwargs):
        raise AssertionError(f"download attempted: {args}")

    import sacrebleu.tokenizers.tokenizer_spm as tokenizer_spm
    import sacrebleu.utils

    monkeypatch.setattr(tokenizer_spm, "download_file", no_download)
    monkeypatch.setattr(sacrebleu.utils, "download_file", no_download)
    return home


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    return train_tiny_spm(tmp_path_factory.mktemp("spm"))


def test_sacrebleu_dir_follows_env(isolated_sacrebleu_home):
    assert sacrebleu_dir() == isolated_sacrebleu_home
    expected = isolated_sacrebleu_home / "models" / "flores200sacrebleuspm"
    assert spm_model_location(MetricConfig()) == expected


def test_default_config_without_model_raises_with_location(isolated_sacrebleu_home):
    expected_path = isolated_sacrebleu_home / "models" / "flores200sacrebleuspm"
    assert not expected_path.exists()
    with pytest.raises(MetricUnavailableError) as info:
        build_metrics(MetricConfig())
    message = str(info.value)
    assert str(expected_path) in message
    assert "bleu_tokenize" in message and "13a" in message  # the alternative tokenizer option
    assert "spm_model_path" in message
    with pytest.raises(MetricUnavailableError):
        Scorer()  # the default Scorer is the paper's spBLEU
    assert not expected_path.exists()  # nothing was downloaded or created


def test_missing_explicit_spm_path_is_named(tmp_path):
    missing = tmp_path / "no" / "such.model"
    with pytest.raises(MetricUnavailableError, match=re.escape(str(missing))):
        build_metrics(MetricConfig(spm_model_path=str(missing)))


def test_explicit_13a_signature():
    _, signatures, hashes = build_metrics(MetricConfig(bleu_tokenize="13a"))
    assert hashes == {"bleu": None, "chrf": None}
    assert "tok:13a" in signatures["bleu"]
    assert signatures["bleu"].startswith("nrefs:1|")
    assert signatures["chrf"].startswith("nrefs:1|")
    assert "nw:0" in signatures["chrf"] and "case:mixed" in signatures["chrf"]
    _, signatures, _ = build_metrics(
        MetricConfig(bleu_tokenize="intl", chrf_word_order=2, lowercase=True)
    )
    assert "tok:intl" in signatures["bleu"] and "case:lc" in signatures["bleu"]
    assert "nw:2" in signatures["chrf"] and "case:lc" in signatures["chrf"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"bleu_tokenize": "moses"},
        {"bleu_tokenize": "FLORES200"},
        {"bleu_tokenize": ""},
        {"chrf_word_order": 3},
        {"chrf_word_order": -1},
        {"unexpected": True},
    ],
)
def test_invalid_config_rejected(kwargs):
    with pytest.raises(ValidationError):
        MetricConfig(**kwargs)


def test_unknown_tokenizer_message_lists_choices():
    with pytest.raises(ValidationError, match=r"'moses'.*\b13a\b"):
        MetricConfig(bleu_tokenize="moses")


def sample_corpus():
    rng = random.Random(9)
    refs = english_lines(seed=101, n=25)
    hyps = []
    for ref in refs:
        words = ref.split()
        for _ in range(rng.randint(0, 3)):
            words[rng.randrange(len(words))] = rng.choice(SPM_WORDS)
        hyps.append(" ".join(words))
    hyps[0] = refs[0]
    hyps[1] = ""
    return refs, hyps


def pretokenised_reference_scores(model_path, refs, hyps):
    """sacreBLEU BLEU(tokenize='none') on text pre-tokenised with the model, plus plain chrF."""
    import sentencepiece
    from sacrebleu.metrics import BLEU, CHRF

    sp = sentencepiece.SentencePieceProcessor()
    sp.Load(str(model_path))

    def tok(lines):
        return [" ".join(sp.EncodeAsPieces(line)) for line in lines]

    return {
        "bleu": BLEU(tokenize="none").corpus_score(tok(hyps), [tok(refs)]).score,
        "chrf": CHRF().corpus_score(hyps, [refs]).score,
    }


def test_spm_model_path_signature_and_scores(spm_model):
    config = MetricConfig(spm_model_path=str(spm_model))
    scorer = Scorer(config)
    digest = hashlib.sha256(spm_model.read_bytes()).hexdigest()
    bleu_sig = scorer.signatures["bleu"]
    assert "tok:flores200" in bleu_sig and "sha256" not in bleu_sig  # sacreBLEU's own format
    assert scorer.tokenizer_sha256 == {"bleu": digest, "chrf": None}

    refs, hyps = sample_corpus()
    results = {r.metric: r.score for r in scorer.score_test_set("t", refs, {"s": hyps})}
    expected = pretokenised_reference_scores(spm_model, refs, hyps)
    assert results == expected
    assert 10 < results["bleu"] < 100  # non-trivial


def test_spm_model_found_in_sacrebleu_home(spm_model, isolated_sacrebleu_home):
    target = isolated_sacrebleu_home / "models" / "flores200sacrebleuspm"
    target.parent.mkdir(parents=True)
    shutil.copyfile(spm_model, target)
    assert sacrebleu_metrics.spm_model_location(MetricConfig()) == target

    scorer = Scorer()  # default config, no spm_model_path
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    assert "tok:flores200" in scorer.signatures["bleu"]
    assert scorer.tokenizer_sha256["bleu"] == digest
    refs, hyps = sample_corpus()
    results = {r.metric: r.score for r in scorer.score_test_set("t", refs, {"s": hyps})}
    assert results == pretokenised_reference_scores(target, refs, hyps)


def test_different_spm_models_same_signature_different_hashes(spm_model, tmp_path):
    other = train_tiny_spm(tmp_path / "other", name="other", vocab_size=40, seed=1)
    a = build_metrics(MetricConfig(spm_model_path=str(spm_model)))
    b = build_metrics(MetricConfig(spm_model_path=str(other)))
    assert a.signatures == b.signatures  # sacreBLEU's signature cannot tell them apart ...
    assert a.tokenizer_sha256["bleu"] == hashlib.sha256(spm_model.read_bytes()).hexdigest()
    assert b.tokenizer_sha256["bleu"] == hashlib.sha256(other.read_bytes()).hexdigest()
    assert a.tokenizer_sha256["bleu"] != b.tokenizer_sha256["bleu"]  # ... the stored hash can


def test_flores101_with_spm_path_names_flores101(spm_model):
    built = build_metrics(MetricConfig(bleu_tokenize="flores101", spm_model_path=str(spm_model)))
    assert "tok:flores101" in built.signatures["bleu"]
    assert built.tokenizer_sha256["bleu"] == hashlib.sha256(spm_model.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("tokenize", "file_name"),
    [
        ("flores200", "flores200sacrebleuspm"),
        ("flores101", "sacrebleu_tokenizer_spm.model"),
        ("spBLEU-1K", "spbleu-1k_tokenizer_spm.model"),
    ],
)
def test_spm_model_file_names(isolated_sacrebleu_home, tokenize, file_name):
    # the file names sacreBLEU itself caches the models under ($SACREBLEU/models/<url basename>)
    config = MetricConfig(bleu_tokenize=tokenize)
    assert spm_model_location(config) == isolated_sacrebleu_home / "models" / file_name
    with pytest.raises(MetricUnavailableError, match=re.escape(file_name)):
        build_metrics(config)


def test_same_scores_as_sacrebleus_own_flores200_tokenizer(
    spm_model, isolated_sacrebleu_home, monkeypatch
):
    # sacreBLEU's own BLEU(tokenize="flores200") loading the same file from its cache folder
    import sacrebleu.tokenizers.tokenizer_spm as tokenizer_spm
    from sacrebleu.metrics import BLEU

    target = isolated_sacrebleu_home / "models" / "flores200sacrebleuspm"
    target.parent.mkdir(parents=True)
    shutil.copyfile(spm_model, target)
    monkeypatch.setattr(tokenizer_spm, "SACREBLEU_DIR", str(isolated_sacrebleu_home))
    for lowercase in (False, True):
        theirs = BLEU(tokenize="flores200", lowercase=lowercase)
        scorer = Scorer(MetricConfig(lowercase=lowercase))
        refs, hyps = sample_corpus()
        hyps = [h.title() if i % 3 == 0 else h for i, h in enumerate(hyps)]  # case matters
        [bleu] = [r for r in scorer.score_test_set("t", refs, {"s": hyps}) if r.metric == "bleu"]
        assert bleu.score == theirs.corpus_score(hyps, [refs]).score
        assert bleu.segment_stats.tolist() == theirs._extract_corpus_statistics(hyps, [refs])
        theirs.num_refs = 1
        assert bleu.signature == theirs.get_signature().format()  # sacreBLEU's own signature
