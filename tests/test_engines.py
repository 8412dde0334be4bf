"""Engines, prompts, cleaning and the translation cache, with tiny random models."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import COPY_ENTRY, tiny_entry, write_models_file

from cultivar_assets.data.testsets import Segment, TestSet
from cultivar_assets.engines import engine_registry
from cultivar_assets.engines.base import EngineLoadError, EngineSettings
from cultivar_assets.engines.cleaning import clean_output
from cultivar_assets.engines.fingerprint import run_fingerprint
from cultivar_assets.engines.prompts import PromptError, get_prompt_style, language_name
from cultivar_assets.models import load_models
from cultivar_assets.translation import translate

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tiny models: one thread

SOURCES = [
    ("deu_Latn", "Am Montag hat die Mannschaft in der Stadt gewonnen ."),
    ("deu_Latn", "der Bürgermeister sagte"),
    ("hin_Deva", "on monday the team won in the city and the mayor said that a new bridge opens"),
    ("spa_Latn", "the"),
]


def _requests(style_name: str, max_new_tokens: int = 6):
    style = get_prompt_style(style_name)
    return [style.request(source, lang, max_new_tokens) for lang, source in SOURCES]


def _spec(models_file, model_id):
    return load_models(models_file).get(model_id)


@pytest.mark.parametrize(("model_id", "style"), [("tiny-base", "base-fewshot"),
                                                 ("tiny-chat", "chat-instruction")])
def test_batched_generation_equals_one_by_one(tiny_models_file, model_id, style):
    from cultivar_assets.engines.transformers_engine import TransformersEngine

    spec = _spec(tiny_models_file, model_id)
    requests = _requests(style)
    batched = TransformersEngine(spec, EngineSettings(batch_size=4)).generate(requests)
    single = TransformersEngine(spec, EngineSettings(batch_size=1)).generate(requests)
    assert batched == single
    assert len(batched) == len(requests)
    assert all(isinstance(text, str) for text in batched)


def test_generation_is_greedy_and_returns_only_new_tokens(tiny_models_file, tiny_model_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from cultivar_assets.engines.transformers_engine import TransformersEngine

    spec = _spec(tiny_models_file, "tiny-base")
    request = _requests("base-fewshot", max_new_tokens=5)[0]
    ours = TransformersEngine(spec, EngineSettings()).generate([request])[0]
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    ids = tokenizer(request.prompt, return_tensors="pt").input_ids
    with torch.inference_mode():
        for _ in range(5):  # plain greedy loop, no generate()
            next_id = model(ids).logits[0, -1].argmax()
            ids = torch.cat([ids, next_id.view(1, 1)], dim=1)
            if tokenizer.decode(ids[0, -1:]) == "\n":
                break
    expected = tokenizer.decode(ids[0, -(ids.shape[1] - len(tokenizer(request.prompt).input_ids)):],
                                skip_special_tokens=True)
    assert ours == expected
    assert request.prompt not in ours


def test_chat_style_needs_a_chat_template(tmp_path, tiny_model_dir):
    from cultivar_assets.engines.transformers_engine import TransformersEngine

    models = write_models_file(tmp_path / "m.yaml",
                               [tiny_entry("base-as-chat", tiny_model_dir, "chat-instruction")])
    engine = TransformersEngine(_spec(models, "base-as-chat"), EngineSettings())
    with pytest.raises(EngineLoadError, match=r"base-as-chat\b.*\btemplate\b"):
        engine.generate(_requests("chat-instruction"))


def test_chat_template_hash_is_recorded(tiny_models_file):
    from cultivar_assets.engines.transformers_engine import TransformersEngine

    chat = TransformersEngine(_spec(tiny_models_file, "tiny-chat"), EngineSettings()).info()
    base = TransformersEngine(_spec(tiny_models_file, "tiny-base"), EngineSettings()).info()
    assert chat.chat_template_hash is not None and len(chat.chat_template_hash) == 64
    assert base.chat_template_hash is None
    assert chat.engine == "transformers" and chat.engine_version.startswith("transformers ")


def test_missing_weights_fail_with_a_clear_message(tmp_path):
    from cultivar_assets.engines.transformers_engine import TransformersEngine

    models = write_models_file(tmp_path / "m.yaml",
                               [tiny_entry("ghost", tmp_path / "nowhere", "base-fewshot")])
    nowhere = re.escape(str(tmp_path / "nowhere"))
    with pytest.raises(EngineLoadError, match=rf"\bghost\b.*{nowhere}"):
        TransformersEngine(_spec(models, "ghost"), EngineSettings())


def test_engine_start_up_refuses_a_missing_package_and_resolves_weights_late(tmp_path,
                                                                            monkeypatch):
    """torch_support.start_engine: the import guard's message, and weights resolved only when
    first read (after the engine checked its options)."""
    from cultivar_assets.engines import torch_support
    from cultivar_assets.engines.transformers_engine import TransformersEngine

    models = write_models_file(tmp_path / "m.yaml",
                               [tiny_entry("ghost", tmp_path / "nowhere", "base-fewshot")])
    spec = _spec(models, "ghost")
    engine = TransformersEngine.__new__(TransformersEngine)
    engine.spec, engine.settings = spec, EngineSettings()
    with pytest.raises(EngineLoadError,
                       match=r"\btransformers\b.*\bjson\b.*\bno_such_package_xyz: pip it$"):
        torch_support.start_engine(engine, ("json", "no_such_package_xyz"), ": pip it")
    calls = []
    monkeypatch.setattr(torch_support, "resolve_weights",
                        lambda *args: calls.append(args) or torch_support.Weights("w", "r"))
    start = torch_support.start_engine(engine, ("json",), "")
    assert calls == []
    assert start.options == {**EngineSettings().model_dump(), **spec.engine_options}
    assert start.modules[0].__name__ == "json"
    assert start.weights == torch_support.Weights("w", "r") and start.weights is start.weights
    assert calls == [(spec.weights, spec.hf_id, spec.revision)]


def test_loading_wraps_loader_errors_and_passes_engine_load_errors():
    from cultivar_assets.engines.torch_support import Weights, loading

    weights = Weights("/models/x", None)
    with (pytest.raises(EngineLoadError, match=r"\bm\b.*/models/x via y: gone$"),
          loading("m", weights, (OSError,), via=" via y")):
        raise OSError("gone")
    # wording is the interface: the error raised below passes through unchanged
    with (pytest.raises(EngineLoadError, match=r"^unknown dtype 'q'$"),
          loading("m", weights, (RuntimeError,))):
        raise EngineLoadError("unknown dtype 'q'")  # a RuntimeError, not re-wrapped
    with pytest.raises(KeyError), loading("m", weights, (OSError,)):  # not a loader error
        raise KeyError("k")


def test_copy_source_engine_returns_the_source(tmp_path):
    models = write_models_file(tmp_path / "m.yaml", [COPY_ENTRY])
    engine_class = engine_registry().get("copy-source")
    engine = engine_class(_spec(models, "copy-source-baseline"), EngineSettings())
    requests = _requests("source")
    assert engine.generate(requests) == [source for _, source in SOURCES]
    assert requests[0].prompt is None and requests[0].messages is None


def test_prompt_styles_render_language_names_and_hash_their_definition():
    style = get_prompt_style("base-fewshot")
    request = style.request("Hallo Welt", "deu_Latn", 32)
    assert request.prompt.endswith("German: Hallo Welt\nEnglish:")
    assert "French: " in request.prompt  # the few-shot examples are part of the prompt
    assert request.stop == ("\n",)
    unnamed = get_prompt_style("base-fewshot-unnamed").request("Hallo Welt", "deu_Latn", 32)
    assert "German" not in unnamed.prompt
    assert unnamed.prompt.endswith("Source: Hallo Welt\nEnglish:")
    chat = get_prompt_style("chat-instruction").request("नमस्ते", "hin_Deva", 32)
    assert chat.messages[0][0] == "user" and "Hindi" in chat.messages[0][1]
    assert chat.messages[0][1].endswith("नमस्ते")
    hashes = {get_prompt_style(n).template_hash for n in
              ("base-fewshot", "base-fewshot-unnamed", "chat-instruction", "source")}
    assert len(hashes) == 4
    assert language_name("cmn_Hans") == "Mandarin Chinese"
    assert language_name("eng_Latn") == "English"
    with pytest.raises(PromptError, match="'fra_Latn'"):
        get_prompt_style("base-fewshot").request("Bonjour", "fra_Latn", 8)


def test_cleaning_rules_fire_and_are_named():
    assert clean_output(" The dog sleeps.\n\nGerman: Der", "x", single_line=True).text == (
        "The dog sleeps.")
    cleaned = clean_output("<think>hmm, names</think>Here is the translation: \"The dog.\"\n\n"
                           "Note: literal.", "Der Hund.", single_line=False)
    assert cleaned.text == "The dog."
    assert cleaned.rules == ("reasoning_block", "preamble", "trailing_note", "wrapping_quotes")
    unclosed = clean_output("<think>still thinking", "x", single_line=False)
    assert unclosed.text == "" and unclosed.rules == ("reasoning_block",)
    quoted_source = clean_output('"Yes," he said.', '"Ja", sagte er.', single_line=False)
    assert quoted_source.text == '"Yes," he said.' and quoted_source.rules == ()
    plain = clean_output("Bayern Munich won the English cup.", "x", single_line=True)
    assert plain.rules == () and plain.text == "Bayern Munich won the English cup."


def _test_sets() -> list[TestSet]:
    return [
        TestSet("flores_deu_Latn", "flores", "deu_Latn", None,
                (Segment(0, SOURCES[0][1], "ref a"), Segment(3, SOURCES[1][1], "ref b"))),
        TestSet("cultivar_hin_Deva_India", "cultivar", "hin_Deva", "hin_Deva_India",
                (Segment(0, SOURCES[2][1], "ref c"),)),
    ]


def test_translation_cache_reuses_outputs_without_loading_the_model(tiny_models_file, tmp_path,
                                                                    monkeypatch):
    spec = _spec(tiny_models_file, "tiny-base")
    first = translate(spec, _test_sets(), cache_dir=tmp_path, show_progress_bar=False)
    assert first.n_generated == 3 and first.n_cached == 0

    def refuse(*args, **kwargs):
        raise AssertionError("the engine must not be loaded when everything is cached")

    monkeypatch.setattr(engine_registry().get("transformers"), "__init__", refuse)
    second = translate(spec, _test_sets(), cache_dir=tmp_path, show_progress_bar=False)
    assert second.n_generated == 0 and second.n_cached == 3
    assert second.rows == first.rows
    assert second.info == first.info
    assert [(r.test_set, r.segment_id) for r in second.rows] == [
        ("flores_deu_Latn", 0), ("flores_deu_Latn", 3), ("cultivar_hin_Deva_India", 0)]


def test_changed_prompt_style_is_not_served_from_cache(tiny_models_file, tmp_path):
    registry = load_models(tiny_models_file)
    spec = registry.get("tiny-base")
    translate(spec, _test_sets(), cache_dir=tmp_path, show_progress_bar=False)
    other = spec.model_copy(update={"prompt_style": "base-fewshot-unnamed"})
    run = translate(other, _test_sets(), cache_dir=tmp_path, show_progress_bar=False)
    assert run.n_generated == 3
    assert run_fingerprint(spec) != run_fingerprint(other)


def test_importing_engines_does_not_import_torch():
    code = ("import sys, cultivar_assets.definitions, cultivar_assets.engines as e; "
            "e.engine_registry(); "
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules; "
            "e.engine_registry().get('copy-source'); assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("text", [
    "The bank issued a note: all branches will close on Monday.",
    "He gave no explanation: the match was simply cancelled.",
    "Explanation: the mayor of Lyon opened a bridge.",
])
def test_notes_inside_a_translation_are_kept(text):
    cleaned = clean_output(text, "x", single_line=False)
    assert cleaned.text == text and cleaned.rules == ()


@pytest.mark.parametrize("raw", ["The dog.\n\nNote: literal.", "The dog. (Note: literal)",
                                 "The dog.\nExplanation: the source is German."])
def test_trailing_notes_are_removed(raw):
    cleaned = clean_output(raw, "x", single_line=False)
    assert cleaned.text == "The dog." and cleaned.rules == ("trailing_note",)


def _copy_spec(tmp_path):
    return load_models(write_models_file(tmp_path / "m.yaml", [COPY_ENTRY])).get(
        COPY_ENTRY["id"])


def test_progress_moves_per_request_the_engine_reports_within_one_batch(tmp_path, monkeypatch):
    """The bar and the progress callback advance as the engine reports requests
    finished (one by one here), not once at the end of the batch."""
    from cultivar_assets.engines.copy_source import CopySourceEngine

    def one_by_one(self, requests, finished):
        outputs = self.generate(requests)
        for _ in outputs:
            finished(1)
        return outputs

    monkeypatch.setattr(CopySourceEngine, "generate_reporting", one_by_one)
    seen: list[tuple[int, int]] = []
    translate(_copy_spec(tmp_path), _test_sets(), EngineSettings(batch_size=16),
              cache_dir=tmp_path / "cache", progress=lambda done, total: seen.append((done, total)),
              show_progress_bar=False)
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_an_engine_reporting_more_requests_than_its_batch_fails(tmp_path, monkeypatch):
    from cultivar_assets.engines.copy_source import CopySourceEngine

    def twice(self, requests, finished):
        outputs = self.generate(requests)
        for _ in outputs:
            finished(2)
        return outputs

    monkeypatch.setattr(CopySourceEngine, "generate_reporting", twice)
    with pytest.raises(RuntimeError, match=r"\b4\b.*\bbatch\b.*\b3\b"):
        translate(_copy_spec(tmp_path), _test_sets(), EngineSettings(batch_size=16),
                  cache_dir=tmp_path / "cache", show_progress_bar=False)
