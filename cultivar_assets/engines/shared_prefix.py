"""Greedy decoding for a batch of prompts that share a prefix (the ``shared-prefix`` decoding).

The transformers engine's ``decoding: shared-prefix`` option (``transformers_engine.py``) decodes
with :func:`greedy_shared_prefix` instead of ``model.generate``. It computes the same greedy
continuation as ``generate(do_sample=False)`` does for each prompt, with two savings that matter
for few-shot prompts on a CPU:

1. **The shared prefix is computed once.** The longest run of leading token ids common to every
   prompt of the batch (for the demo's 3-shot prompts, 114 of ~158 tokens: the ``<bos>`` and the
   three examples) goes through the model once, with batch size 1; its key/value cache is then
   repeated for every row, and only each row's own suffix is computed. At least one token of every
   prompt is left in its suffix, so that each row has a last position to predict from.
2. **Finished rows leave the batch.** A row stops at one of the model's end-of-sequence tokens,
   when one of its stop strings is complete, or after its ``max_new_tokens``; its cache rows are
   dropped, so later steps compute only the rows still running (``generate`` keeps every row until
   the last one stops and pads the finished ones).

Definitions (the rules ``generate`` applies, which this reproduces):

- prompt token ids come from the caller, tokenised one prompt at a time (padding never changes
  them);
- suffixes are left-padded to the longest suffix: a row's tokens are ``prefix + pads + suffix``,
  the attention mask is 0 on the pads, and position ids count only unmasked tokens
  (``cumsum(mask) - 1``), exactly as ``generate`` derives them for left-padded prompts;
- each step takes the arg-max of the float32 logits of the last position (the first index among
  equal maxima, ``torch.argmax``);
- a row's stop strings are checked with transformers' own ``StopStringCriteria`` on the row's
  prompt and output tokens; a stop string ends the row at the token that completes it, and that
  token, like an end-of-sequence token, is part of the output.

Two differences from the engine's ``generate`` path, both ours: each row keeps its *own*
``max_new_tokens`` and stop strings (``generate`` applies the batch's maximum and the union of
its stop strings to every row; the same thing when a batch is uniform, as in every run of the
translation loop), and the floating-point reductions run over other tensor shapes (a prefix of
batch size 1, shorter suffixes), so on rare near-ties the arg-max can differ in the last bits;
``benchmarks/bench_first_run.py --compare-decoding`` counts such differences on the demo.

Only plain greedy decoding is supported: a model whose ``generation_config`` asks for beams or for
logits processors (repetition penalty, banned words, forced tokens, minimum length, ...) is
refused with the name of the setting (:func:`unsupported_generation_settings`), never decoded
differently in silence.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

# generation_config fields that change greedy decoding when they differ from their defaults
GREEDY_CHANGING_SETTINGS = (
    "num_beams",
    "num_beam_groups",
    "penalty_alpha",
    "repetition_penalty",
    "encoder_repetition_penalty",
    "no_repeat_ngram_size",
    "encoder_no_repeat_ngram_size",
    "bad_words_ids",
    "force_words_ids",
    "min_length",
    "min_new_tokens",
    "forced_bos_token_id",
    "forced_eos_token_id",
    "forced_decoder_ids",
    "suppress_tokens",
    "begin_suppress_tokens",
    "sequence_bias",
    "exponential_decay_length_penalty",
    "guidance_scale",
    "watermarking_config",
    "epsilon_cutoff",  # sampling-only in transformers, listed so that a future change is caught
)

StopCheck = Callable[["torch.Tensor"], "torch.Tensor"]  # [rows, length] ids -> [rows] bool


def unsupported_generation_settings(generation_config: Any) -> list[str]:
    """Names of ``generation_config`` settings (non-default) that plain greedy decoding ignores."""
    from transformers import GenerationConfig

    defaults = GenerationConfig()
    found = []
    for name in GREEDY_CHANGING_SETTINGS:
        if not hasattr(defaults, name) or name == "epsilon_cutoff":
            continue
        value = getattr(generation_config, name, None)
        if value is not None and value != getattr(defaults, name):
            found.append(f"{name}={value!r}")
    return found


def shared_prefix_length(rows: Sequence[Sequence[int]]) -> int:
    """Leading tokens common to every row, leaving at least one token in each row's suffix."""
    if not rows:
        return 0
    shortest = min(len(row) for row in rows)
    length = 0
    first = rows[0]
    while length < shortest - 1 and all(row[length] == first[length] for row in rows):
        length += 1
    return length


def cache_keyword(model: Any) -> str:
    """``cache`` in recent transformers, ``past_key_values`` before (the forward's own name)."""
    parameters = inspect.signature(type(model).forward).parameters  # not a wrapper's
    return "cache" if "cache" in parameters else "past_key_values"


def greedy_shared_prefix(
    model: Any,
    rows: Sequence[Sequence[int]],
    max_new_tokens: Sequence[int],
    stop_checks: Sequence[StopCheck | None],
    eos_token_ids: Sequence[int],
    pad_token_id: int,
) -> list[list[int]]:
    """Greedy continuation (new token ids) of each prompt in ``rows``; see the module docstring.

    ``stop_checks[i]`` decides for row ``i`` whether its stop strings are complete, given the
    row's prompt and output ids left-padded into a 2-D tensor (a ``StopStringCriteria``; ``None``:
    no stop strings). Rows that share a check object are checked together.
    """
    import torch
    from transformers import DynamicCache

    n = len(rows)
    if n == 0:
        return []
    if not (len(max_new_tokens) == len(stop_checks) == n):
        raise ValueError("rows, max_new_tokens and stop_checks must have the same length")
    if any(len(row) == 0 for row in rows):
        raise ValueError("every prompt needs at least one token")
    device = model.device
    keyword = cache_keyword(model)
    cache = DynamicCache(config=model.config)
    prefix = shared_prefix_length(rows)
    with torch.inference_mode():
        if prefix:
            model(input_ids=torch.tensor([list(rows[0][:prefix])], device=device),
                  use_cache=True, logits_to_keep=1, **{keyword: cache})
            cache.batch_repeat_interleave(n)
        suffix_lengths = [len(row) - prefix for row in rows]
        width = max(suffix_lengths)
        suffix = torch.full((n, width), pad_token_id, dtype=torch.long)
        mask = torch.zeros((n, prefix + width), dtype=torch.long)
        mask[:, :prefix] = 1
        for i, (row, length) in enumerate(zip(rows, suffix_lengths, strict=True)):
            suffix[i, width - length:] = torch.tensor(list(row[prefix:]), dtype=torch.long)
            mask[i, prefix + width - length:] = 1
        positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
        # the whole prompt of each row (left-padded), for the stop-string checks
        longest = max(len(row) for row in rows)
        history = torch.full((n, longest), pad_token_id, dtype=torch.long)
        for i, row in enumerate(rows):
            history[i, longest - len(row):] = torch.tensor(list(row), dtype=torch.long)
        suffix, mask, positions = suffix.to(device), mask.to(device), positions.to(device)
        logits = model(input_ids=suffix, attention_mask=mask, position_ids=positions[:, prefix:],
                       use_cache=True, logits_to_keep=1, **{keyword: cache}).logits
        last_position = positions[:, -1]
        eos = torch.tensor(sorted(set(eos_token_ids)), dtype=torch.long)
        outputs: list[list[int]] = [[] for _ in range(n)]
        active = list(range(n))  # original row index of each batch row
        while True:
            tokens = logits[:, -1].to(dtype=torch.float32).argmax(dim=-1).cpu()
            history = torch.cat([history, tokens[:, None]], dim=1)
            for j, i in enumerate(active):
                outputs[i].append(int(tokens[j]))
            done = torch.isin(tokens, eos)
            done |= torch.tensor([len(outputs[i]) >= max_new_tokens[i] for i in active])
            for check in {id(c): c for c in stop_checks if c is not None}.values():
                members = [j for j, i in enumerate(active) if stop_checks[i] is check]
                if members:
                    done[members] |= check(history[members]).cpu()
            if bool(done.all()):
                return outputs
            if bool(done.any()):
                keep = (~done).nonzero().flatten()
                cache.batch_select_indices(keep.to(device))
                active = [active[j] for j in keep.tolist()]
                tokens, history = tokens[keep], history[keep]
                mask, last_position = mask[keep.to(device)], last_position[keep.to(device)]
            mask = torch.cat([mask, mask.new_ones((len(active), 1))], dim=1)
            last_position = last_position + 1
            logits = model(input_ids=tokens[:, None].to(device), attention_mask=mask,
                           position_ids=last_position[:, None], use_cache=True,
                           logits_to_keep=1, **{keyword: cache}).logits


class SharedPrefixDecoder:
    """Tokenises prompts, decodes them with :func:`greedy_shared_prefix`, and decodes the output.

    Used by the transformers engine for ``decoding: shared-prefix``. Prompts are tokenised one by
    one with ``add_special_tokens`` as the caller says (plain prompts: yes; chat templates already
    hold them), sorted by token count (so that each batch pads little) and decoded in batches of
    ``batch_size``; the output of each prompt is its new tokens decoded with special tokens
    skipped, as the ``generate`` path decodes them. One ``StopStringCriteria`` is built per
    distinct tuple of stop strings and kept.
    """

    def __init__(self, model: Any, tokenizer: Any, batch_size: int) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self._stop_checks: dict[tuple[str, ...], StopCheck] = {}

    def _stop_check(self, stops: tuple[str, ...]) -> StopCheck | None:
        if not stops:
            return None
        if stops not in self._stop_checks:
            from transformers import StopStringCriteria

            criteria = StopStringCriteria(tokenizer=self.tokenizer, stop_strings=list(stops))
            self._stop_checks[stops] = lambda ids: criteria(ids, None)
        return self._stop_checks[stops]

    def generate(self, texts: Sequence[str], add_special_tokens: bool,
                 max_new_tokens: Sequence[int], stops: Sequence[tuple[str, ...]]) -> list[str]:
        rows = [self.tokenizer(text, add_special_tokens=add_special_tokens)["input_ids"]
                for text in texts]
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        outputs: list[str] = [""] * len(rows)
        pad = self.tokenizer.pad_token_id
        eos = getattr(self.model.generation_config, "eos_token_id", None)  # as generate reads it
        eos_token_ids = [eos] if isinstance(eos, int) else list(eos or [])
        for start in range(0, len(order), self.batch_size):
            batch = order[start:start + self.batch_size]
            new_tokens = greedy_shared_prefix(
                self.model, [rows[i] for i in batch], [max_new_tokens[i] for i in batch],
                [self._stop_check(tuple(stops[i])) for i in batch], eos_token_ids,
                pad if pad is not None else 0,
            )
            texts_out = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
            for i, text in zip(batch, texts_out, strict=True):
                outputs[i] = text
        return outputs
