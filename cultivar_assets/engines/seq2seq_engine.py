"""Encoder-decoder MT engine (NLLB-200, MADLAD-400) on Hugging Face transformers, CPU or GPU.

Takes prompt kind ``source``: each request carries the bare source text and its FLORES+ language
code (``deu_Latn``, ``cmn_Hans``, ...); the target is always English.

- NLLB-200 (``model_type`` ``m2m_100``): the encoder input is
  ``[source language code] + text tokens + [</s>]`` (the tokenizer's non-legacy format, built
  explicitly), and decoding starts with the forced token ``eng_Latn``. The language code is the
  FLORES-200 code of the request's language (``cmn_Hans`` -> ``zho_Hans``, ``fil_Latn`` ->
  ``tgl_Latn``, from the locale registry); ``engine_options.source_code_map`` (FLORES+ code ->
  model code) overrides it. A language whose code is not in the tokenizer's vocabulary (NLLB-200
  has no ``gom_Deva``) is an error, never a silent guess.
- MADLAD-400 (``model_type`` ``t5``): the input is ``"<2en> " + text`` tokenised as usual (the
  tokenizer appends ``</s>``); the source language is not given to the model.

The family comes from ``engine_options.family`` (``nllb`` / ``madlad``) or the model type.
Decoding is greedy (``num_beams`` defaults to 1); the requests of one call are sorted by token
length, generated in right-padded batches of ``batch_size`` and returned in request order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cultivar_assets.data.locales import source_languages
from cultivar_assets.engines.base import Engine, EngineInfo, EngineLoadError, EngineSettings
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

FAMILIES = ("nllb", "madlad")
FAMILY_BY_MODEL_TYPE = {"m2m_100": "nllb", "t5": "madlad"}
NLLB_TARGET = "eng_Latn"  # forced first decoder token
MADLAD_TARGET = "<2en>"  # prefix of every source


def nllb_source_code(language: str, source_code_map: Mapping[str, str] | None = None) -> str:
    """The NLLB code for a FLORES+ ``language``: the map's entry, else its FLORES-200 code.

    ``cmn_Hans`` -> ``zho_Hans``, ``fil_Latn`` -> ``tgl_Latn``; languages outside the locale
    registry, or without a FLORES-200 code (``gom_Deva``), are returned unchanged.
    """
    if source_code_map and language in source_code_map:
        return source_code_map[language]
    locales = source_languages().get(language)
    if locales and locales[0].flores200_code:
        return locales[0].flores200_code
    return language


class Seq2SeqEngine(Engine):
    name = "seq2seq"
    prompt_kinds = ("source",)
    uses_gpu = True

    def __init__(self, spec: ModelSpec, settings: EngineSettings) -> None:
        super().__init__(spec, settings)
        start = start_engine(self, ("torch", "transformers"), ": pip install -e '.[cpu]'")
        (transformers,) = start.modules[1:]
        options: dict[str, Any] = start.options
        self.batch_size = int(options["batch_size"])
        self.num_beams = int(options.get("num_beams", 1))
        self.device = resolve_device(options["device"])
        source_code_map = options.get("source_code_map") or {}
        if not isinstance(source_code_map, Mapping):
            raise EngineLoadError(
                f"{spec.id}: engine_options.source_code_map must map FLORES+ codes to model codes"
            )
        self.source_code_map: dict[str, str] = {str(k): str(v) for k, v in source_code_map.items()}
        weights = start.weights
        self.revision = weights.revision
        with loading(spec.id, weights, torch_load_errors()):
            config = load_pretrained(transformers.AutoConfig, weights)
            self.family = self._family(options.get("family"), config.model_type)
            self.tokenizer = load_pretrained(transformers.AutoTokenizer, weights)
            self.model = load_torch_model(transformers.AutoModelForSeq2SeqLM, weights,
                                          options["dtype"], self.device)
        self.pad_id = self.tokenizer.pad_token_id
        if self.pad_id is None:
            self.pad_id = self.tokenizer.eos_token_id
        self._vocab = self.tokenizer.get_vocab()
        self._check_tokens()
        self._version = transformers.__version__

    def _family(self, option: str | None, model_type: str) -> str:
        if option is not None:
            if option not in FAMILIES:
                raise EngineLoadError(
                    f"{self.spec.id}: engine_options.family {option!r} is not one of "
                    f"{', '.join(FAMILIES)}"
                )
            return option
        if model_type not in FAMILY_BY_MODEL_TYPE:
            raise EngineLoadError(
                f"{self.spec.id}: cannot tell the model family from model_type {model_type!r}; "
                f"set engine_options.family to one of {', '.join(FAMILIES)}"
            )
        return FAMILY_BY_MODEL_TYPE[model_type]

    def _check_tokens(self) -> None:
        """Fail at load time when the target token or a mapped source code is missing."""
        if self.family == "nllb":
            self._token_id(NLLB_TARGET, "the English target code")
            if self.tokenizer.eos_token_id is None:
                raise EngineLoadError(f"{self.spec.id}: the tokenizer has no eos token")
            for language, code in self.source_code_map.items():
                self._token_id(code, f"engine_options.source_code_map[{language!r}]")
        else:
            target_id = self._token_id(MADLAD_TARGET, "the English target token")
            if target_id not in self.tokenizer(f"{MADLAD_TARGET} x").input_ids[:2]:
                raise EngineLoadError(
                    f"{self.spec.id}: the tokenizer splits {MADLAD_TARGET!r} into pieces"
                )

    def _token_id(self, token: str, what: str) -> int:
        token_id = self._vocab.get(token)
        if token_id is None:
            raise EngineLoadError(
                f"{self.spec.id}: {what} {token!r} is not in the tokenizer's vocabulary"
            )
        return token_id

    def info(self) -> EngineInfo:
        return EngineInfo(
            engine=self.name,
            engine_version=f"transformers {self._version}",
            model_revision=self.revision,
            chat_template_hash=None,
        )

    def source_code_id(self, language: str) -> int:
        """The vocabulary id of the NLLB code for FLORES+ ``language``; raises if it has none."""
        code = nllb_source_code(language, self.source_code_map)
        token_id = self._vocab.get(code)
        if token_id is None:
            raise EngineLoadError(
                f"{self.spec.id}: no language code for source language {language!r} "
                f"({code!r} is not in the tokenizer's vocabulary); set "
                f"engine_options.source_code_map, e.g. {{{language}: <a code the model has>}}, "
                "to choose a substitute explicitly"
            )
        return token_id

    def encode(self, request: GenerationRequest) -> list[int]:
        """Encoder input ids: NLLB ``[code] + tokens + [</s>]``; MADLAD ``<2en> text </s>``."""
        if self.family == "nllb":
            tokens = self.tokenizer(request.source, add_special_tokens=False).input_ids
            return [self.source_code_id(request.language), *tokens,
                    self.tokenizer.eos_token_id]
        return list(self.tokenizer(f"{MADLAD_TARGET} {request.source}").input_ids)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        return self.generate_reporting(requests, lambda _count: None)

    def generate_reporting(self, requests: Sequence[GenerationRequest],
                           finished: Callable[[int], None]) -> list[str]:
        """:meth:`generate`, reporting each batch of ``batch_size`` requests as it is done."""
        import torch

        encoded = [self.encode(request) for request in requests]
        order = sorted(range(len(requests)), key=lambda i: -len(encoded[i]))
        outputs: list[str] = [""] * len(requests)
        extra: dict[str, int] = {}
        if self.family == "nllb":
            extra["forced_bos_token_id"] = self._vocab[NLLB_TARGET]
        for start in range(0, len(order), self.batch_size):
            batch = order[start:start + self.batch_size]
            width = max(len(encoded[i]) for i in batch)
            input_ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
            attention_mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, i in enumerate(batch):
                input_ids[row, :len(encoded[i])] = torch.tensor(encoded[i])
                attention_mask[row, :len(encoded[i])] = 1
            with torch.inference_mode():
                generated = self.model.generate(
                    input_ids=input_ids.to(self.device),
                    attention_mask=attention_mask.to(self.device),
                    max_new_tokens=max(requests[i].max_new_tokens for i in batch),
                    num_beams=self.num_beams,
                    do_sample=False,
                    pad_token_id=self.pad_id,
                    **extra,
                )
            for row, i in enumerate(batch):
                # generated[row, 0] is the decoder start token (NLLB's forced eng_Latn counts
                # as a new token, as in generate()); cut to this request's own limit.
                new = generated[row, 1:1 + requests[i].max_new_tokens]
                outputs[i] = self.tokenizer.decode(new, skip_special_tokens=True)
            finished(len(batch))
        return outputs

    def close(self) -> None:
        del self.model
        release_memory()
