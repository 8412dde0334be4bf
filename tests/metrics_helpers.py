"""Shared helpers for the tests of ``cultivar_assets.metrics`` (not a test module).

Everything here is independent of the code under test: random text generators, a plain
``Counter``-based n-gram matcher written from the docstring formulas, reference sacreBLEU metric
objects, and a tiny SentencePiece model trained on generated English.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

# Alphabets of several scripts; tests combine them so texts mix scripts.
ALPHABETS = {
    "ascii": "abcdefghijklmnopqrstuvwxyzABCDEFGH0123456789",
    "accented": "àáâãäåçèéêëìíîïñòóôõöùúûüýÿßÀÉÖÜŒœ",
    # consonants, independent vowels, vowel signs and virama (combining marks)
    "devanagari": "कखगघचछजझटठडढतथदधनपफबभमयरलवशसहअआइईउऊािीुूेैोौ्ंः",
    "cjk": "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年",
    "emoji": "😀🎉👍🏽❤️🚀🌍🙈✨",
    "punct": ".,!?;:'\"()-–—…«»",
}
WHITESPACE = [" ", " ", " ", "  ", "\t", "\u3000", " \t ", "   "]
EDGE_HYPOTHESES = ["", "a", ".", " ", "the the the the", "the the the the the the"]


def random_word(rng: random.Random, alphabet: str, max_len: int = 5) -> str:
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, max_len)))


def random_sentence(rng: random.Random, alphabet: str, max_words: int = 14) -> str:
    words = [random_word(rng, alphabet) for _ in range(rng.randint(0, max_words))]
    text = ""
    for word in words:
        text += word + rng.choice(WHITESPACE)
    return rng.choice(["", " ", "\t"]) + text + rng.choice(["", ".", " .", "!", " "])


def perturb(rng: random.Random, reference: str, alphabet: str) -> str:
    """A hypothesis sharing n-grams with ``reference``: words dropped, swapped or replaced."""
    words = reference.split()
    out = []
    for word in words:
        r = rng.random()
        if r < 0.15:
            continue
        if r < 0.3:
            out.append(random_word(rng, alphabet))
        elif r < 0.4:
            out.extend([word, word])
        else:
            out.append(word)
    if len(out) > 1 and rng.random() < 0.3:
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
    return rng.choice(WHITESPACE).join(out)


def random_corpus(
    rng: random.Random, alphabet: str, n_segments: int, n_systems: int
) -> tuple[list[str], dict[str, list[str]]]:
    """References and hypotheses of ``n_systems`` systems, with edge cases mixed in."""
    refs = [random_sentence(rng, alphabet) for _ in range(n_segments)]
    systems: dict[str, list[str]] = {}
    for k in range(n_systems):
        hyps = []
        for ref in refs:
            r = rng.random()
            if r < 0.5:
                hyps.append(perturb(rng, ref, alphabet))
            elif r < 0.7:
                hyps.append(random_sentence(rng, alphabet))
            elif r < 0.85:
                hyps.append(ref)
            else:
                hyps.append(rng.choice(EDGE_HYPOTHESES))
        systems[f"system_{k}"] = hyps
    systems["all_empty"] = [""] * n_segments
    systems["identical"] = list(refs)
    return refs, systems


def counter_match_statistics(
    ref_units: Sequence[Sequence], hyp_units: Sequence[Sequence], hyp_segment: Sequence[int],
    max_order: int,
) -> tuple[list[list[int]], list[list[int]], list[list[int]]]:
    """The docstring formulas of ``ngram_stats.match_statistics``, with plain Counters.

    hyp_count_n = max(len(h) - n + 1, 0); ref_count_n = max(len(r) - n + 1, 0);
    match_n = sum over distinct n-grams g of min(count_h(g), count_r(g)).
    """
    hyp_count, ref_count, match = [], [], []
    for hyp, seg in zip(hyp_units, hyp_segment, strict=True):
        ref = ref_units[seg]
        hc, rc, mc = [], [], []
        for n in range(1, max_order + 1):
            h = Counter(tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1))
            r = Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1))
            hc.append(max(len(hyp) - n + 1, 0))
            rc.append(max(len(ref) - n + 1, 0))
            mc.append(sum(min(c, r[g]) for g, c in h.items()))
        hyp_count.append(hc)
        ref_count.append(rc)
        match.append(mc)
    return hyp_count, ref_count, match


def reference_metrics(tokenize: str, word_order: int = 0, lowercase: bool = False):
    """Plain sacreBLEU objects configured like ``MetricConfig`` (independent of our code)."""
    from sacrebleu.metrics import BLEU, CHRF

    return {
        "bleu": BLEU(tokenize=tokenize, lowercase=lowercase),
        "chrf": CHRF(word_order=word_order, lowercase=lowercase),
    }


SPM_WORDS = (
    "the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while", "people",
    "in", "city", "walk", "to", "river", "market", "on", "sunday", "morning", "and",
    "children", "play", "football", "near", "old", "mountain", "houses",
)


def english_lines(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(SPM_WORDS) for _ in range(rng.randint(3, 12))) for _ in range(n)]


def train_tiny_spm(directory: Path, name: str = "tiny", vocab_size: int = 48,
                   seed: int = 0) -> Path:
    """Train a small unigram SentencePiece model on generated English; return the .model path."""
    import sentencepiece

    directory.mkdir(parents=True, exist_ok=True)
    corpus = directory / f"{name}_train.txt"
    corpus.write_text("\n".join(english_lines(seed, 400)) + "\n", encoding="utf-8")
    sentencepiece.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(directory / name),
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=1.0,
        num_threads=1,
        minloglevel=2,
    )
    return directory / f"{name}.model"


def paired_benchmark(seed: int = 3, models: Sequence[str] = ("m1", "m2")):
    """Texts keyed by instance id for two languages and three locales of the real registry.

    hin_Deva: flores ids 0..29; locale India has all of them, US lacks ids 3, 7, 12, 20, 21.
    deu_Latn: locale Germany has ids 0..9, but id 4 has no FLORES original (not in flores).
    Returns (references[test set][id], hypotheses[model][test set][id]).
    """
    rng = random.Random(seed)
    alphabet = ALPHABETS["ascii"]

    def texts(ids):
        return {i: random_sentence(rng, alphabet) for i in ids}

    us = [i for i in range(30) if i not in (3, 7, 12, 20, 21)]
    references = {
        "flores_hin_Deva": texts(range(30)),
        "cultivar_hin_Deva_India": texts(range(30)),
        "cultivar_hin_Deva_US": texts(us),
        "flores_deu_Latn": texts([i for i in range(10) if i != 4]),
        "cultivar_deu_Latn_Germany": texts(range(10)),
    }
    hypotheses = {
        model: {
            name: {i: perturb(rng, ref, alphabet) if rng.random() < 0.8
                   else random_sentence(rng, alphabet) for i, ref in refs.items()}
            for name, refs in references.items()
        }
        for model in models
    }
    return references, hypotheses


PAIRED_LOCALES = ("hin_Deva_India", "hin_Deva_US", "deu_Latn_Germany")


def sacrebleu_segment_rows(metrics, references, hypotheses):
    """metric -> (model, test set) -> (sorted ids, sacreBLEU's per-segment statistics)."""
    out: dict = {name: {} for name in metrics}
    for model, tests in hypotheses.items():
        for test_set, hyps in tests.items():
            ids = sorted(hyps)
            for name, metric in metrics.items():
                rows = metric._extract_corpus_statistics(
                    [hyps[i] for i in ids], [[references[test_set][i] for i in ids]])
                out[name][(model, test_set)] = (ids, rows)
    return out
