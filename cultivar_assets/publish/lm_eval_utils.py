"""The ``utils.py`` of Cultivar's lm-evaluation-harness tasks (written next to their YAML).

``cultivar export lm-eval`` copies this file's text, with ``SETTINGS`` the exporting project's
``metrics`` settings, into the task folder (lm-eval's ``!function utils.<name>``). It imports only
the standard library, ``datasets`` and sacreBLEU (``sentencepiece`` for spBLEU), never
``cultivar_assets``: the tasks run where only lm-eval is installed.

- :func:`load_docs` (``custom_dataset``): the split ``test``, from the JSON Lines file ``docs``
  beside this file (``test_set``, ``id``, ``source``, ``reference``, ``language``).
- :func:`cultivar_bleu` / :func:`cultivar_chrf` (``metric``): per document, (reference,
  hypothesis); :func:`corpus_bleu` / :func:`corpus_chrf` (``aggregation``): sacreBLEU's corpus
  score with the project's settings, the objects ``cultivar_assets.metrics.registry`` builds (BLEU
  with ``SETTINGS["bleu_tokenize"]`` and ``lowercase``; chrF with ``chrf_word_order`` and
  ``lowercase``; one reference). lm-eval's own ``bleu`` is 13a, not spBLEU; its ``chrf`` has word
  order 0 and no ``lowercase``.
- spBLEU (``flores200``, ``flores101``, ``spBLEU-1K``): the SentencePiece model from
  ``SETTINGS["spm_model_path"]`` or sacreBLEU's cache (``$SACREBLEU/models/<file>``, default
  ``~/.sacrebleu``), never downloaded: absent, scoring stops saying where to put it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

SETTINGS = {"bleu_tokenize": "flores200", "lowercase": False, "chrf_word_order": 0,
            "spm_model_path": None}
SPM_TOKENIZERS = ("flores200", "flores101", "spBLEU-1K")


def load_docs(docs: str, **_: object):
    """``{"test": Dataset}`` of the JSON Lines file ``docs`` (relative to this file's folder)."""
    import datasets

    path = Path(__file__).resolve().parent / docs
    with path.open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})


def _spm_tokenizer(name: str):
    import sentencepiece
    from sacrebleu.tokenizers.tokenizer_spm import SPM_MODELS, TokenizerSPM
    from sacrebleu.utils import SACREBLEU_DIR

    url = SPM_MODELS[name]["url"]
    path = (Path(SETTINGS["spm_model_path"]).expanduser() if SETTINGS["spm_model_path"] else
            Path(os.environ.get("SACREBLEU", SACREBLEU_DIR)) / "models" / os.path.basename(url))
    if not path.is_file():
        raise RuntimeError(f"spBLEU needs the {name} SentencePiece model, which is not at "
                           f"{path} and is not downloaded here; put the file there (sacreBLEU "
                           f"downloads it from {url})")
    tokenizer = TokenizerSPM.__new__(TokenizerSPM)  # its __init__ would download a missing file
    tokenizer.name = SPM_MODELS[name]["signature"]
    tokenizer.sp = sentencepiece.SentencePieceProcessor()
    tokenizer.sp.Load(str(path))
    return tokenizer


def bleu_metric():
    """sacreBLEU's BLEU configured as the project configures it (one reference)."""
    from sacrebleu.metrics import BLEU

    name = SETTINGS["bleu_tokenize"]
    if name not in SPM_TOKENIZERS:
        bleu = BLEU(tokenize=name, lowercase=SETTINGS["lowercase"])
    else:
        bleu = BLEU(tokenize="none", lowercase=SETTINGS["lowercase"])
        bleu.tokenizer = _spm_tokenizer(name)
        bleu.tokenizer_signature = bleu.tokenizer.signature()
    bleu.num_refs = 1
    return bleu


def chrf_metric():
    """sacreBLEU's chrF configured as the project configures it (one reference)."""
    from sacrebleu.metrics import CHRF

    chrf = CHRF(word_order=SETTINGS["chrf_word_order"], lowercase=SETTINGS["lowercase"])
    chrf.num_refs = 1
    return chrf


def cultivar_bleu(references, predictions):
    """The document's (reference, hypothesis), for :func:`corpus_bleu`."""
    return references[0], predictions[0]


def cultivar_chrf(references, predictions):
    """The document's (reference, hypothesis), for :func:`corpus_chrf`."""
    return references[0], predictions[0]


def _corpus(metric, items) -> float:
    references = [reference for reference, _ in items]
    hypotheses = [hypothesis for _, hypothesis in items]
    return float(metric.corpus_score(hypotheses, [references]).score)


def corpus_bleu(items) -> float:
    """Corpus BLEU of the (reference, hypothesis) pairs, with the project's settings."""
    return _corpus(bleu_metric(), items)


def corpus_chrf(items) -> float:
    """Corpus chrF of the (reference, hypothesis) pairs, with the project's settings."""
    return _corpus(chrf_metric(), items)
