"""The seq2seq engine (NLLB-200, MADLAD-400) with tiny random encoder-decoders built here."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import tiny_bpe_tokenizer, tiny_entry, write_models_file

from cultivar_assets.data.locales import source_languages
from cultivar_assets.data.testsets import Segment, TestSet
from cultivar_assets.engines.base import EngineLoadError, EngineSettings
from cultivar_assets.engines.prompts import get_prompt_style
from cultivar_assets.models import load_models
from cultivar_assets.translation import translate

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tiny models: one thread

NLLB_CODES = ["eng_Latn", "deu_Latn", "zho_Hans", "tgl_Latn", "hin_Deva", "spa_Latn"]
SOURCES = [  # very different lengths, not in length order
    ("deu_Latn", "der Bürgermeister sagte"),
    ("hin_Deva", "on monday the team won in the city and the mayor said that a new bridge opens "
                 "and the team said that the city won"),
    ("spa_Latn", "the"),
    ("cmn_Hans", "am montag hat die mannschaft in der stadt gewonnen ."),
    ("fil_Latn", "a new bridge opens"),
]
SETTINGS = EngineSettings(device="cpu", dtype="float32")


@pytest.fixture(scope="module")
def nllb_dir(tmp_path_factory) -> Path:
    """A 2-layer random M2M100 (the NLLB architecture) with NLLB's special-token layout."""
    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration

    tokenizer, size = tiny_bpe_tokenizer(["<s>", "<pad>", "</s>", "<unk>", *NLLB_CODES])
    torch.manual_seed(0)
    config = M2M100Config(
        vocab_size=size, d_model=64, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=128,
        decoder_ffn_dim=128, max_position_embeddings=256, bos_token_id=0, pad_token_id=1,
        eos_token_id=2, decoder_start_token_id=2, init_std=0.5,  # varied outputs
    )
    folder = tmp_path_factory.mktemp("tiny_nllb")
    M2M100ForConditionalGeneration(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def madlad_dir(tmp_path_factory) -> Path:
    """A 2-layer random T5 (the MADLAD-400 architecture) whose tokenizer has ``<2en>``."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    tokenizer, size = tiny_bpe_tokenizer(["<pad>", "</s>", "<unk>", "<2en>", "<2de>"],
                                         eos_template=True)
    torch.manual_seed(0)
    config = T5Config(
        vocab_size=size, d_model=64, d_kv=32, d_ff=128, num_layers=2, num_decoder_layers=2,
        num_heads=2, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0,
        initializer_factor=5.0,  # random weights that do not just emit </s>
    )
    folder = tmp_path_factory.mktemp("tiny_madlad")
    T5ForConditionalGeneration(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _spec(tmp_path: Path, folder: Path, **options):
    entry = tiny_entry("tiny-mt", folder, "source", type="MT", engine="seq2seq",
                       weights="hub", engine_options={"max_new_tokens": 8, **options})
    return load_models(write_models_file(tmp_path / "models.yaml", [entry])).get("tiny-mt")


def _engine(tmp_path: Path, folder: Path, **options):
    from cultivar_assets.engines.seq2seq_engine import Seq2SeqEngine

    return Seq2SeqEngine(_spec(tmp_path, folder, **options), SETTINGS)


def _requests(sources=SOURCES, max_new_tokens: int = 8):
    style = get_prompt_style("source")
    return [style.request(text, language, max_new_tokens) for language, text in sources]


def _capture_generate(engine) -> list[dict]:
    """Record the inputs and outputs of every model.generate call."""
    calls: list[dict] = []
    original = engine.model.generate

    def spy(**kwargs):
        output = original(**kwargs)
        calls.append({**kwargs, "output": output})
        return output

    engine.model.generate = spy
    return calls


@pytest.mark.parametrize("family", ["nllb", "madlad"])
def test_batched_output_equals_one_by_one_in_request_order(tmp_path, nllb_dir, madlad_dir,
                                                           family):
    folder = nllb_dir if family == "nllb" else madlad_dir
    batched_engine = _engine(tmp_path, folder, batch_size=3)
    assert batched_engine.family == family and batched_engine.batch_size == 3
    calls = _capture_generate(batched_engine)
    requests = _requests()
    batched = batched_engine.generate(requests)
    single_engine = _engine(tmp_path, folder, batch_size=1)
    single = [single_engine.generate([request])[0] for request in requests]
    assert batched == single
    assert len(set(single)) > 1 and all(isinstance(text, str) for text in single)
    assert [call["input_ids"].shape[0] for call in calls] == [3, 2]  # 5 requests, batch 3
    reported: list[int] = []  # progress moves per batch, not once for all requests
    assert batched_engine.generate_reporting(requests, reported.append) == batched
    assert reported == [3, 2]
    # sorted by length: the longest source (index 1) opens the first batch, right-padded
    first = calls[0]
    assert first["input_ids"].shape[1] == len(batched_engine.encode(requests[1]))
    assert first["attention_mask"][0].all() and not first["attention_mask"][-1].all()


def test_nllb_input_ids_use_the_flores200_code_and_end_with_eos(tmp_path, nllb_dir):
    engine = _engine(tmp_path, nllb_dir)
    vocab = engine.tokenizer.get_vocab()
    eos = engine.tokenizer.eos_token_id
    expected = {"deu_Latn": "deu_Latn", "cmn_Hans": "zho_Hans", "fil_Latn": "tgl_Latn",
                "hin_Deva": "hin_Deva"}
    for language, code in expected.items():
        request = _requests([(language, "the city")])[0]
        ids = engine.encode(request)
        body = engine.tokenizer("the city", add_special_tokens=False).input_ids
        assert ids == [vocab[code], *body, eos]


def test_nllb_forces_english_as_the_first_generated_token(tmp_path, nllb_dir):
    engine = _engine(tmp_path, nllb_dir)
    calls = _capture_generate(engine)
    outputs = engine.generate(_requests())
    generated = calls[0]["output"]
    assert (generated[:, 0] == engine.model.config.decoder_start_token_id).all()
    assert (generated[:, 1] == engine.tokenizer.convert_tokens_to_ids("eng_Latn")).all()
    assert calls[0]["num_beams"] == 1 and calls[0]["do_sample"] is False
    assert not any("eng_Latn" in text for text in outputs)  # special tokens are skipped


def test_nllb_language_without_a_code_needs_an_explicit_substitute(tmp_path, nllb_dir):
    request = _requests([("gom_Deva", "the city")])[0]
    with pytest.raises(EngineLoadError, match=r"gom_Deva.*source_code_map"):
        _engine(tmp_path, nllb_dir).generate([request])
    engine = _engine(tmp_path, nllb_dir, source_code_map={"gom_Deva": "hin_Deva"})
    assert engine.encode(request)[0] == engine.tokenizer.convert_tokens_to_ids("hin_Deva")
    assert isinstance(engine.generate([request])[0], str)
    with pytest.raises(EngineLoadError, match="xxx_Latn"):  # a bad map fails at load time
        _engine(tmp_path, nllb_dir, source_code_map={"gom_Deva": "xxx_Latn"})


def test_nllb_source_codes_and_the_real_nllb_code_list():
    from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES

    from cultivar_assets.engines.seq2seq_engine import nllb_source_code

    assert nllb_source_code("cmn_Hans") == "zho_Hans"
    assert nllb_source_code("fil_Latn") == "tgl_Latn"
    assert nllb_source_code("deu_Latn") == "deu_Latn"
    assert nllb_source_code("gom_Deva") == "gom_Deva"
    assert nllb_source_code("cmn_Hans", {"cmn_Hans": "zho_Hant"}) == "zho_Hant"
    missing = [code for code in source_languages() if nllb_source_code(code)
               not in FAIRSEQ_LANGUAGE_CODES]
    assert missing == ["gom_Deva"]  # NLLB-200 has every other Cultivar source language


def test_madlad_inputs_begin_with_the_target_token(tmp_path, madlad_dir):
    engine = _engine(tmp_path, madlad_dir, batch_size=2)
    calls = _capture_generate(engine)
    requests = _requests()
    engine.generate(requests)
    target = engine.tokenizer.convert_tokens_to_ids("<2en>")
    eos = engine.tokenizer.eos_token_id
    for request in requests:
        ids = engine.encode(request)
        assert ids[0] == target and ids[-1] == eos
    assert all((call["input_ids"][:, 0] == target).all() for call in calls)
    assert "forced_bos_token_id" not in calls[0]


def test_family_option_and_load_errors(tmp_path, nllb_dir, madlad_dir):
    assert _engine(tmp_path, madlad_dir, family="madlad").family == "madlad"
    with pytest.raises(EngineLoadError, match="family 'marian'"):
        _engine(tmp_path, nllb_dir, family="marian")
    with pytest.raises(EngineLoadError, match=r"\btiny-mt\b.*\bnowhere\b"):
        _engine(tmp_path, tmp_path / "nowhere")
    info = _engine(tmp_path, nllb_dir).info()
    assert info.engine == "seq2seq" and info.engine_version.startswith("transformers ")
    assert info.chat_template_hash is None and info.model_revision is None


def test_translate_runs_the_engine_on_test_sets(tmp_path, nllb_dir):
    spec = _spec(tmp_path, nllb_dir, batch_size=2)
    test_sets = [
        TestSet("flores_deu_Latn", "flores", "deu_Latn", None,
                (Segment(0, SOURCES[0][1], "ref a"), Segment(1, SOURCES[1][1], "ref b"))),
        TestSet("cultivar_cmn_Hans_China", "cultivar", "cmn_Hans", "cmn_Hans_China",
                (Segment(0, SOURCES[3][1], "ref c"),)),
    ]
    run = translate(spec, test_sets, settings=SETTINGS, cache_dir=tmp_path / "cache",
                    show_progress_bar=False)
    assert run.n_generated == 3 and run.info.engine == "seq2seq"
    assert [(row.test_set, row.segment_id) for row in run.rows] == [
        ("flores_deu_Latn", 0), ("flores_deu_Latn", 1), ("cultivar_cmn_Hans_China", 0)]
    engine = _engine(tmp_path, nllb_dir, batch_size=1)
    expected = engine.generate(_requests([("deu_Latn", SOURCES[0][1]), ("deu_Latn", SOURCES[1][1]),
                                          ("cmn_Hans", SOURCES[3][1])]))
    assert [row.raw_output for row in run.rows] == expected
