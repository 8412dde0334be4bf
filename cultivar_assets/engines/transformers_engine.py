"""Hugging Face transformers engine: batched greedy decoding with a causal LM, on CPU or GPU.

Plain prompts (base models) are tokenised as they are, with the tokenizer's special tokens;
chat prompts go through the tokenizer's own chat template (a chat style on a model without one
is an error, not a silent fallback). Batches are left-padded; generation stops at
``max_new_tokens`` or, per sequence, at the request's stop strings. The raw output is the decoded
new tokens; cleaning happens later and keeps the raw text.

Option ``decoding``: ``generate`` (the default: ``model.generate``, greedy) or ``shared-prefix``
(``shared_prefix.py``: the batch's common prompt prefix is computed once and finished rows leave
the batch; the same greedy rule; its CPU time beside ``generate``'s: docs/performance.md). The
option is part of the model's fingerprint, so the two never share cached translations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from cultivar_assets.engines.base import (
    Engine,
    EngineInfo,
    EngineLoadError,
    EngineSettings,
    Generation,
    GenerationFailure,
    text_sha256,
)
from cultivar_assets.engines.prompts import GenerationRequest
from cultivar_assets.engines.torch_support import (
    load_pretrained,
    load_torch_model,
    loading,
    release_memory,
    resolve_device,
    start_engine,
    torch_load_errors,
)

if TYPE_CHECKING:
    from cultivar_assets.specs import ModelSpec

DECODINGS = ("generate", "shared-prefix")


class TransformersEngine(Engine):
    name = "transformers"
    prompt_kinds = ("plain", "chat")
    uses_gpu = True

    def __init__(self, spec: ModelSpec, settings: EngineSettings) -> None:
        super().__init__(spec, settings)
        start = start_engine(self, ("torch", "transformers"), ": pip install -e '.[cpu]'")
        (transformers,) = start.modules[1:]
        options = start.options
        self.batch_size = int(options["batch_size"])
        self.device = resolve_device(options["device"])
        self.decoding = str(options.get("decoding", "generate"))
        if self.decoding not in DECODINGS:
            raise EngineLoadError(f"{spec.id}: unknown decoding {self.decoding!r} "
                                  f"(known: {', '.join(DECODINGS)})")
        weights = start.weights
        self.revision = weights.revision
        with loading(spec.id, weights, torch_load_errors()):
            self.tokenizer = load_pretrained(transformers.AutoTokenizer, weights)
            self.model = load_torch_model(transformers.AutoModelForCausalLM, weights,
                                          options["dtype"], self.device)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self._version = transformers.__version__
        self._shared_prefix = None
        if self.decoding == "shared-prefix":
            from cultivar_assets.engines.shared_prefix import (
                SharedPrefixDecoder,
                unsupported_generation_settings,
            )

            ignored = unsupported_generation_settings(self.model.generation_config)
            if ignored:
                raise EngineLoadError(
                    f"{spec.id}: decoding 'shared-prefix' is plain greedy decoding, but the "
                    f"model's generation_config sets {', '.join(ignored)}; use decoding: generate"
                )
            self._shared_prefix = SharedPrefixDecoder(self.model, self.tokenizer, self.batch_size)

    def info(self) -> EngineInfo:
        return EngineInfo(
            engine=self.name,
            engine_version=f"transformers {self._version}",
            model_revision=self.revision,
            chat_template_hash=text_sha256(self.tokenizer.chat_template),
        )

    def _render(self, request: GenerationRequest) -> str:
        if request.kind == "plain":
            return request.prompt or ""
        if not self.tokenizer.chat_template:
            raise EngineLoadError(
                f"{self.spec.id}: prompt style {self.spec.prompt_style!r} is a chat style but the "
                "tokenizer has no chat template; use a plain (few-shot) prompt style"
            )
        messages = [{"role": role, "content": content} for role, content in request.messages or ()]
        return self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True
        )

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        return self.generate_reporting(requests, lambda _count: None)

    def generate_reporting(self, requests: Sequence[GenerationRequest],
                           finished: Callable[[int], None]) -> list[str]:
        """:meth:`generate`, reporting each request as it finishes: the rows of a batch one by
        one, with shared-prefix decoding as they leave the batch, with ``generate`` as
        :class:`_FinishedRows` sees them end (the rest when the batch returns)."""
        import torch

        if self._shared_prefix is not None:
            chat = [r.kind == "chat" for r in requests]
            if len(set(chat)) > 1:
                raise ValueError("a batch mixes plain and chat prompts")
            return self._shared_prefix.generate(
                [self._render(r) for r in requests], add_special_tokens=not any(chat),
                max_new_tokens=[r.max_new_tokens for r in requests],
                stops=[r.stop for r in requests], finished=finished,
            )
        outputs: list[str] = []
        for start in range(0, len(requests), self.batch_size):
            batch = requests[start:start + self.batch_size]
            texts = [self._render(r) for r in batch]
            chat = batch[0].kind == "chat"  # a chat template already holds the special tokens
            encoded = self.tokenizer(
                texts, return_tensors="pt", padding=True, add_special_tokens=not chat
            ).to(self.device)
            stops = sorted({s for r in batch for s in r.stop})
            rows = _FinishedRows(self.tokenizer, encoded["input_ids"].shape[1], stops,
                                 self.model.generation_config.eos_token_id, finished)
            with torch.inference_mode():
                generated = self.model.generate(
                    **encoded,
                    max_new_tokens=max(r.max_new_tokens for r in batch),
                    do_sample=False,
                    stop_strings=stops or None,
                    tokenizer=self.tokenizer if stops else None,
                    pad_token_id=self.tokenizer.pad_token_id,
                    stopping_criteria=rows.criteria(),
                )
            new_tokens = generated[:, encoded["input_ids"].shape[1]:]
            outputs += self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
            finished(len(batch) - rows.reported)
        return outputs

    def generate_detailed(
        self, requests: Sequence[GenerationRequest]
    ) -> list[Generation | GenerationFailure]:
        """:meth:`generate`, with token counts by this model's tokenizer: the prompt as the
        engine encodes it (special tokens included), the answer re-encoded from its decoded text
        (which can differ by a token or two from the ids generated)."""
        texts = self.generate(requests)
        generations: list[Generation | GenerationFailure] = []
        for request, text in zip(requests, texts, strict=True):
            chat = request.kind == "chat"
            prompt = self.tokenizer(self._render(request), add_special_tokens=not chat)
            answer = self.tokenizer(text, add_special_tokens=False)
            generations.append(Generation(text, len(prompt["input_ids"]),
                                          len(answer["input_ids"])))
        return generations

    def close(self) -> None:
        del self.model
        release_memory()


class _FinishedRows:
    """Reports the rows of one ``model.generate`` batch as they end, for the progress bar: a
    row has ended once its new tokens hold an end-of-sequence token or its decoded text holds
    one of the batch's stop strings (the two ways ``generate`` ends a row before
    ``max_new_tokens``). Called by ``generate`` after each step as a stopping criterion that
    never stops anything, so the outputs are ``generate``'s own."""

    def __init__(self, tokenizer, prompt_length: int, stops: Sequence[str], eos,
                 finished: Callable[[int], None]) -> None:
        self.tokenizer, self.prompt_length, self.stops = tokenizer, prompt_length, tuple(stops)
        self.eos = set(eos if isinstance(eos, list | tuple) else [] if eos is None else [eos])
        self.finished, self.done, self.reported = finished, set(), 0

    def criteria(self):
        from transformers import StoppingCriteria, StoppingCriteriaList

        rows = self

        class Report(StoppingCriteria):
            def __call__(self, input_ids, scores, **kwargs):
                import torch

                rows.step(input_ids[:, rows.prompt_length:])
                return torch.zeros(input_ids.shape[0], dtype=torch.bool,
                                   device=input_ids.device)

        return StoppingCriteriaList([Report()])

    def step(self, new_tokens) -> None:
        ended = 0
        for row in range(new_tokens.shape[0]):
            if row in self.done:
                continue
            tokens = new_tokens[row].tolist()
            if (self.eos and self.eos.intersection(tokens)) or (self.stops and any(
                    stop in self.tokenizer.decode(tokens, skip_special_tokens=True)
                    for stop in self.stops)):
                self.done.add(row)
                ended += 1
        if ended:
            self.reported += ended
            self.finished(ended)
