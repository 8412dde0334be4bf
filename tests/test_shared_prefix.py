"""The transformers engine's ``decoding: shared-prefix`` against its ``generate`` path.

The reference is the ``generate`` path with one request per batch (so that each request keeps
its own stop strings and max_new_tokens, as shared-prefix decoding gives every row), on tiny
random models; outputs must be equal token for token.
"""

from __future__ import annotations

import dataclasses

import pytest
from conftest import tiny_entry, write_models_file

from cultivar_assets.engines.base import EngineLoadError, EngineSettings
from cultivar_assets.engines.prompts import get_prompt_style
from cultivar_assets.engines.shared_prefix import shared_prefix_length
from cultivar_assets.models import load_models

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tiny models: one thread

SOURCES = [
    ("deu_Latn", "Am Montag hat die Mannschaft in der Stadt gewonnen ."),
    ("deu_Latn", "der Bürgermeister sagte"),
    ("hin_Deva", "on monday the team won in the city and the mayor said that a new bridge opens"),
    ("spa_Latn", "the"),
    ("cmn_Hans", "die stadt"),
]


def _engine(tmp_path, folder, style, decoding, batch_size=8):
    from cultivar_assets.engines.transformers_engine import TransformersEngine

    entry = tiny_entry("tiny", folder, style)
    entry["engine_options"] = {"decoding": decoding, "batch_size": batch_size}
    spec = load_models(write_models_file(tmp_path / f"{decoding}.yaml", [entry])).get("tiny")
    return TransformersEngine(spec, EngineSettings(device="cpu", dtype="float32"))


def _requests(style_name, max_new_tokens=8):
    style = get_prompt_style(style_name)
    return [style.request(source, lang, max_new_tokens) for lang, source in SOURCES]


def _reference(tmp_path, folder, style, requests):
    return _engine(tmp_path, folder, style, "generate", batch_size=1).generate(requests)


@pytest.mark.parametrize(("model", "style"), [("tiny_model_dir", "base-fewshot"),
                                              ("tiny_chat_model_dir", "chat-instruction")])
def test_outputs_equal_the_generate_path(request, tmp_path, model, style):
    folder = request.getfixturevalue(model)
    requests = _requests(style)
    expected = _reference(tmp_path, folder, style, requests)
    for batch_size in (2, 8):
        engine = _engine(tmp_path, folder, style, "shared-prefix", batch_size)
        assert engine.generate(requests) == expected
    assert any(text.strip() for text in expected)


def test_each_row_keeps_its_own_stop_strings_and_length(tmp_path, tiny_model_dir):
    plain = _requests("base-fewshot", max_new_tokens=10)
    free = _reference(tmp_path, tiny_model_dir, "base-fewshot",
                      [dataclasses.replace(r, stop=()) for r in plain])
    # a stop string taken from inside each row's own free-running output, and mixed lengths
    requests = []
    for number, (req, text) in enumerate(zip(plain, free, strict=True)):
        inside = [c for c in text[1:len(text) // 2 + 1] if c != "\ufffd"]
        requests.append(dataclasses.replace(req, stop=(inside[0],) if inside else (),
                                            max_new_tokens=4 + 2 * number))
    expected = _reference(tmp_path, tiny_model_dir, "base-fewshot", requests)
    engine = _engine(tmp_path, tiny_model_dir, "base-fewshot", "shared-prefix")
    assert engine.generate(requests) == expected
    assert any(len(a) < len(b) for a, b in zip(expected, free, strict=True))  # stops did cut


def test_end_of_sequence_ends_a_row(tmp_path, tiny_model_dir):
    requests = _requests("base-fewshot")
    reference = _engine(tmp_path, tiny_model_dir, "base-fewshot", "generate", batch_size=1)
    tokenizer = reference.tokenizer
    first = tokenizer(reference.generate(requests[:1])[0], add_special_tokens=False).input_ids
    eos = first[1]  # the second token row 0 generates becomes an end-of-sequence token
    engine = _engine(tmp_path, tiny_model_dir, "base-fewshot", "shared-prefix")
    for model in (reference.model, engine.model):
        model.generation_config.eos_token_id = [2, eos]
    expected = reference.generate(requests)
    assert engine.generate(requests) == expected
    assert tokenizer(expected[0], add_special_tokens=False).input_ids == first[:2]


def test_finished_rows_leave_the_batch_and_the_prefix_runs_once(tmp_path, tiny_model_dir):
    style = get_prompt_style("base-fewshot")
    requests = [style.request(source, lang, 3 + 3 * i) for i, (lang, source) in
                enumerate(SOURCES)]  # rows finish one after another
    engine = _engine(tmp_path, tiny_model_dir, "base-fewshot", "shared-prefix")
    shapes = []
    decoder = engine.model.get_decoder()  # a Llama: the arg-max is fused with the output layer
    forward = decoder.forward

    def recording(*args, **kwargs):
        shapes.append(tuple(kwargs["input_ids"].shape))
        return forward(*args, **kwargs)

    decoder.forward = recording
    engine.generate(requests)
    rows = [tokens for tokens in (engine.tokenizer(r.prompt).input_ids for r in requests)]
    prefix = shared_prefix_length(rows)
    assert prefix > 20  # the three examples
    assert shapes[0] == (1, prefix)  # the shared prefix, once, with batch size 1
    assert shapes[1][0] == len(requests)  # every row's own suffix
    batch_sizes = [rows for rows, _ in shapes[2:]]
    assert batch_sizes == sorted(batch_sizes, reverse=True) and batch_sizes[-1] == 1
    assert len(batch_sizes) == max(r.max_new_tokens for r in requests) - 1


def _tiny_gemma3(folder, tokenizer_source):
    """A 3-layer random Gemma 3 (text) whose sliding window (4) is shorter than every prompt,
    with one key/value head for two query heads and logit soft-capping set."""
    import torch
    from transformers import AutoTokenizer, Gemma3ForCausalLM, Gemma3TextConfig

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_source)
    torch.manual_seed(1)
    config = Gemma3TextConfig(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=3,
        num_attention_heads=2, num_key_value_heads=1, head_dim=32, sliding_window=4,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        final_logit_softcapping=3.0, bos_token_id=1, eos_token_id=2, pad_token_id=0,
        max_position_embeddings=4096,
    )
    Gemma3ForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_sliding_windows_soft_caps_groups_and_unfused_heads_equal_generate(
        tmp_path, tiny_model_dir, monkeypatch):
    from cultivar_assets.engines import shared_prefix

    gemma = _tiny_gemma3(tmp_path / "gemma3", tiny_model_dir)
    style = get_prompt_style("base-fewshot")
    requests = [style.request(source, lang, 4 + 2 * i) for i, (lang, source) in
                enumerate(SOURCES)]  # rows of different lengths finish at different steps
    for folder in (gemma, tiny_model_dir):
        expected = _reference(tmp_path, folder, "base-fewshot", requests)
        assert any(text.strip() for text in expected)
        engine = _engine(tmp_path, folder, "base-fewshot", "shared-prefix")
        assert engine.generate(requests) == expected
        monkeypatch.setattr(shared_prefix, "PREFILL_GROUP_ROWS", 2)  # three prefill groups
        monkeypatch.setattr(shared_prefix, "HEAD_CHUNK_ROWS", 7)  # many output-layer chunks
        assert engine.generate(requests) == expected
        monkeypatch.setattr(shared_prefix, "FUSED_HEAD_CLASSES", frozenset())  # model's forward
        assert engine.generate(requests) == expected
        monkeypatch.undo()


def test_shared_prefix_length_leaves_every_row_a_token():
    assert shared_prefix_length([[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 3]]) == 2
    assert shared_prefix_length([[1, 2], [1, 2]]) == 1
    assert shared_prefix_length([[7], [1, 2]]) == 0
    assert shared_prefix_length([]) == 0


def test_generation_settings_it_cannot_honour_are_refused(tmp_path, tiny_model_dir):
    import shutil

    from transformers import GenerationConfig

    folder = tmp_path / "penalised"
    shutil.copytree(tiny_model_dir, folder)
    GenerationConfig(bos_token_id=1, eos_token_id=2, repetition_penalty=1.3).save_pretrained(folder)
    with pytest.raises(EngineLoadError, match=r"repetition_penalty=1\.3"):
        _engine(tmp_path, folder, "base-fewshot", "shared-prefix")
    _engine(tmp_path, folder, "base-fewshot", "generate")  # the generate path applies it


def test_unknown_decoding_and_fingerprints(tmp_path, tiny_model_dir):
    from cultivar_assets.engines.fingerprint import run_fingerprint

    with pytest.raises(EngineLoadError, match="'beam'"):
        _engine(tmp_path, tiny_model_dir, "base-fewshot", "beam")
    fingerprints = set()
    for decoding in ("generate", "shared-prefix"):
        entry = tiny_entry("tiny", tiny_model_dir, "base-fewshot")
        entry["engine_options"] = {"decoding": decoding}
        path = write_models_file(tmp_path / f"f-{decoding}.yaml", [entry])
        fingerprints.add(run_fingerprint(load_models(path).get("tiny")))
    assert len(fingerprints) == 2  # never served from each other's cache


def test_rows_are_reported_as_they_finish(tmp_path, tiny_model_dir):
    """Progress within one batch moves per finished row, not once per batch."""
    style = get_prompt_style("base-fewshot")
    requests = [style.request(source, lang, 3 + 3 * i) for i, (lang, source) in
                enumerate(SOURCES)]  # rows finish one after another
    engine = _engine(tmp_path, tiny_model_dir, "base-fewshot", "shared-prefix")
    reported: list[int] = []
    outputs = engine.generate_reporting(requests, reported.append)  # one batch (batch_size 8)
    assert sum(reported) == len(requests) and len(reported) > 1, reported
    assert outputs == engine.generate(requests)


def test_generate_reports_rows_as_they_end_within_a_batch(tmp_path, tiny_model_dir):
    """With ``decoding: generate`` too, progress moves as rows end (at a stop string
    here), not once per batch; the outputs are generate's own."""
    from dataclasses import replace

    engine = _engine(tmp_path, tiny_model_dir, "base-fewshot", "generate")
    plain = _requests("base-fewshot", max_new_tokens=12)
    unstopped = engine.generate([replace(r, stop=()) for r in plain])
    # each row's stop: a piece of its own greedy output, ending after a different number of
    # characters, so that the rows end at different steps
    requests = [replace(r, stop=(text[2 + 2 * i:4 + 2 * i],))
                for i, (r, text) in enumerate(zip(plain, unstopped, strict=True))]
    assert all(r.stop[0] for r in requests), unstopped
    reported: list[int] = []
    outputs = engine.generate_reporting(requests, reported.append)  # one batch (batch_size 8)
    assert sum(reported) == len(requests) and len(reported) > 1, reported
    assert outputs == engine.generate(requests)
