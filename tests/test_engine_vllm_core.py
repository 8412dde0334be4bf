"""The vLLM engine's own logic without vLLM: what it gives ``vllm.LLM``, ``generate`` and
``chat`` (options, sampling parameters, the order of mixed plain and chat requests), its
batch size, info, chat format and load errors, against a stand-in ``vllm`` module that records
every call. The same paths with the real vLLM CPU build: tests/test_engine_vllm.py (slow; CI).
"""

from __future__ import annotations

import dataclasses
import hashlib
import sys
import types
from pathlib import Path
from typing import ClassVar

import pytest
from conftest import CHAT_TEMPLATE, tiny_entry

from cultivar_assets.engines.base import EngineLoadError, EngineSettings
from cultivar_assets.engines.prompts import get_prompt_style
from cultivar_assets.engines.vllm_engine import (
    UNBOUNDED_BATCH,
    VLLMEngine,
    chat_format,
    llm_options,
)
from cultivar_assets.specs import ModelSpec

SOURCES = [("deu_Latn", "Am Montag hat die Mannschaft gewonnen ."),
           ("hin_Deva", "on monday the team won"), ("spa_Latn", "the")]


@dataclasses.dataclass
class FakeEngineArgs:  # a few of vLLM's EngineArgs fields
    model: str = ""
    revision: str | None = None
    dtype: str = "auto"
    max_num_seqs: int = 256
    max_model_len: int | None = None
    enforce_eager: bool = False
    tensor_parallel_size: int = 1


class FakeSamplingParams:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


class FakeTokenizer:
    """Token ids are the characters' code points, plus special id 0 (skipped when asked)."""

    def __init__(self, template: str | None):
        self.chat_template = template

    def decode(self, ids, skip_special_tokens):
        return "".join(chr(i) for i in ids if i or not skip_special_tokens)


def _output(text: str):
    return types.SimpleNamespace(outputs=[types.SimpleNamespace(token_ids=(0, *map(ord, text)))])


class FakeLLM:
    """Records its keyword arguments and every call; its output names what it was given."""

    instances: ClassVar[list[FakeLLM]] = []

    def __init__(self, **kwargs):
        if not Path(kwargs["model"]).is_dir():
            raise OSError(f"no model at {kwargs['model']}")
        self.kwargs = kwargs
        self.calls: list[tuple[str, list, list, dict]] = []
        template = Path(kwargs["model"], "chat_template.jinja")
        self.tokenizer = FakeTokenizer(template.read_text("utf-8") if template.is_file() else None)
        FakeLLM.instances.append(self)

    def get_tokenizer(self):
        return self.tokenizer

    def generate(self, prompts, params, use_tqdm):
        self.calls.append(("generate", prompts, params, {"use_tqdm": use_tqdm}))
        return [_output(f"plain {p.kwargs['max_tokens']} {prompt[-8:]}")
                for prompt, p in zip(prompts, params, strict=True)]

    def chat(self, conversations, params, **kwargs):
        self.calls.append(("chat", conversations, params, kwargs))
        return [_output(f"chat {p.kwargs['max_tokens']} {turns[-1]['content'][-8:]}")
                for turns, p in zip(conversations, params, strict=True)]


@pytest.fixture
def fake_vllm(monkeypatch):
    """A ``vllm`` module (with ``vllm.engine.arg_utils`` and ``vllm.distributed.parallel_state``)
    whose ``LLM`` is :class:`FakeLLM`; ``cleaned`` counts the engine's cleanup calls."""
    vllm = types.ModuleType("vllm")
    vllm.__version__ = "0.99.0"
    vllm.LLM, vllm.SamplingParams = FakeLLM, FakeSamplingParams
    vllm.cleaned = []
    arg_utils = types.ModuleType("vllm.engine.arg_utils")
    arg_utils.EngineArgs = FakeEngineArgs
    parallel_state = types.ModuleType("vllm.distributed.parallel_state")
    parallel_state.cleanup_dist_env_and_memory = lambda: vllm.cleaned.append(True)
    modules = {"vllm": vllm, "vllm.engine": types.ModuleType("vllm.engine"),
               "vllm.engine.arg_utils": arg_utils,
               "vllm.distributed": types.ModuleType("vllm.distributed"),
               "vllm.distributed.parallel_state": parallel_state}
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    FakeLLM.instances = []
    return vllm


def _model(tmp_path: Path, template: str | None) -> Path:
    folder = tmp_path / ("chat" if template else "base")
    folder.mkdir()
    if template:
        (folder / "chat_template.jinja").write_text(template, "utf-8")
    return folder


def _engine(folder: Path, style: str, model_id: str = "tiny", **options) -> VLLMEngine:
    entry = tiny_entry(model_id, folder, style, engine="vllm")
    entry["engine_options"] = options
    return VLLMEngine(ModelSpec.model_validate(entry), EngineSettings(batch_size=8))


def _requests(style_name: str, stop: tuple[str, ...] | None = None):
    style = get_prompt_style(style_name)
    requests = [style.request(source, lang, 5 + i) for i, (lang, source) in enumerate(SOURCES)]
    return requests if stop is None else [dataclasses.replace(r, stop=stop) for r in requests]


def test_llm_gets_the_entrys_weights_dtype_and_passed_options_only(fake_vllm, tmp_path):
    folder = _model(tmp_path, CHAT_TEMPLATE)
    engine = _engine(folder, "chat-instruction", dtype="float32", max_num_seqs=3, batch_size=2,
                     chat_template_kwargs={"enable_thinking": False}, use_tqdm=False,
                     max_model_len=None)
    (llm,) = FakeLLM.instances
    # engine options of its own (batch_size, chat_template_kwargs, use_tqdm) and nulls stay out
    assert llm.kwargs == {"model": str(folder), "revision": None, "dtype": "float32",
                          "max_num_seqs": 3}
    assert engine.batch_size == 2  # the model's own option; the run-wide 8 does not count
    assert _engine(folder, "chat-instruction").batch_size == UNBOUNDED_BATCH
    assert FakeLLM.instances[1].kwargs["dtype"] == "auto"


def test_mixed_plain_and_chat_requests_come_back_in_request_order(fake_vllm, tmp_path):
    engine = _engine(_model(tmp_path, CHAT_TEMPLATE), "chat-instruction",
                     chat_template_kwargs={"enable_thinking": False}, use_tqdm=False)
    plain, chat = _requests("base-fewshot"), _requests("chat-instruction", stop=("\n", "##"))
    mixed = [chat[0], plain[1], chat[2]]
    texts = engine.generate(mixed)
    (llm,) = FakeLLM.instances
    (_, prompts, plain_params, plain_kwargs), (_, conversations, chat_params, chat_kwargs) = \
        llm.calls
    assert prompts == [plain[1].prompt]
    assert conversations == [[{"role": r, "content": c} for r, c in request.messages]
                             for request in (chat[0], chat[2])]
    assert chat_kwargs == {"use_tqdm": False, "add_generation_prompt": True,
                           "chat_template_kwargs": {"enable_thinking": False}}
    assert plain_kwargs == {"use_tqdm": False}
    # greedy, the request's own max_new_tokens and stop strings (none: None)
    assert [p.kwargs for p in chat_params] == [
        {"temperature": 0.0, "max_tokens": 5, "stop": ["\n", "##"]},
        {"temperature": 0.0, "max_tokens": 7, "stop": ["\n", "##"]}]
    assert plain_params[0].kwargs["max_tokens"] == 6 and plain_params[0].kwargs["temperature"] == 0
    assert plain_params[0].kwargs["stop"] == (list(plain[1].stop) or None)
    # the special token (id 0) is skipped in decoding; each text goes back to its request
    assert texts == [f"chat 5 {chat[0].messages[-1][1][-8:]}", f"plain 6 {plain[1].prompt[-8:]}",
                     f"chat 7 {chat[2].messages[-1][1][-8:]}"]


def test_a_chat_style_without_a_chat_format_fails_before_generating(fake_vllm, tmp_path):
    engine = _engine(_model(tmp_path, None), "chat-instruction", model_id="tiny-base")
    assert engine.generate(_requests("base-fewshot"))  # plain prompts need no chat template
    with pytest.raises(EngineLoadError, match=r"tiny-base: .*chat template"):
        engine.generate(_requests("chat-instruction"))
    assert [call[0] for call in FakeLLM.instances[0].calls] == ["generate"]


def test_info_names_vllms_version_and_hashes_the_chat_template(fake_vllm, tmp_path):
    info = _engine(_model(tmp_path, CHAT_TEMPLATE), "chat-instruction").info()
    assert info.engine == "vllm" and info.engine_version == "vllm 0.99.0"
    assert info.model_revision is None
    assert info.chat_template_hash == hashlib.sha256(CHAT_TEMPLATE.encode()).hexdigest()
    assert _engine(_model(tmp_path, None), "base-fewshot").info().chat_template_hash is None


def test_missing_weights_and_unknown_options_fail_naming_the_model(fake_vllm, tmp_path):
    with pytest.raises(EngineLoadError, match=r"cannot load ghost from .*nowhere with vLLM"):
        _engine(tmp_path / "nowhere", "base-fewshot", model_id="ghost")
    with pytest.raises(EngineLoadError, match=r"ghost: engine_options \['max_num_seqz'\].*"
                                              r"vLLM 0\.99\.0's EngineArgs"):
        _engine(_model(tmp_path, None), "base-fewshot", model_id="ghost", max_num_seqz=4)
    assert FakeLLM.instances == []  # refused before anything loads


def test_close_shuts_down_the_engine_core_and_cleans_up(fake_vllm, tmp_path, monkeypatch):
    released = []
    monkeypatch.setattr("cultivar_assets.engines.torch_support.release_memory",
                        lambda: released.append(True))
    engine = _engine(_model(tmp_path, None), "base-fewshot")
    core = types.SimpleNamespace(stopped=[])
    core.shutdown = lambda: core.stopped.append(True)
    engine.llm.llm_engine = types.SimpleNamespace(engine_core=core)
    engine.close()
    assert core.stopped == [True] and fake_vllm.cleaned == [True] and released == [True]
    assert not hasattr(engine, "llm")


def test_llm_options_refuse_registry_fields_and_unknown_names():
    def spec(**options):
        entry = tiny_entry("m", Path("weights"), "base-fewshot", engine="vllm")
        return ModelSpec.model_validate({**entry, "engine_options": options})

    fields = [field.name for field in dataclasses.fields(FakeEngineArgs)]
    assert llm_options(spec(tensor_parallel_size=2, dtype="bfloat16", batch_size=4,
                            chat_template_kwargs={"a": 1}, max_num_seqs=None), fields,
                       "0.1") == {"tensor_parallel_size": 2}
    with pytest.raises(EngineLoadError, match=r"^m: engine_options \['revision'\] come from the "
                                              r"registry entry"):
        llm_options(spec(revision="main"), fields, "0.1")
    with pytest.raises(EngineLoadError) as refused:
        llm_options(spec(max_num_seqz=4, zeta=1), fields, "0.1")
    assert "['max_num_seqz', 'zeta']" in str(refused.value) and "vLLM 0.1" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_chat_format_names_mistral_commons_instruct_tokenizer(monkeypatch):
    monkeypatch.setitem(sys.modules, "mistral_common",
                        types.SimpleNamespace(__version__="1.8.5"))

    class InstructTokenizerV3:
        pass

    mistral = types.SimpleNamespace(IS_MISTRAL_TOKENIZER=True, instruct=InstructTokenizerV3(),
                                    version=3)
    assert chat_format(mistral) == "mistral_common 1.8.5 InstructTokenizerV3 v3"
    assert chat_format(FakeTokenizer("{{ x }}")) == "{{ x }}"
    assert chat_format(FakeTokenizer("")) is None
    assert chat_format(types.SimpleNamespace()) is None
