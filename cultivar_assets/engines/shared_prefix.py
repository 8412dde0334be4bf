"""Greedy decoding for a batch of prompts that share a prefix (the ``shared-prefix`` decoding).

:func:`greedy_shared_prefix` (the transformers engine's ``decoding: shared-prefix``) computes the
greedy continuation ``generate(do_sample=False)`` gives each prompt, with two savings: the longest
run of leading token ids common to every prompt goes through the model once (batch size 1, at
least one token left in each suffix), its keys and values copied to every row, and each row's
suffix computed in groups of up to :data:`PREFILL_GROUP_ROWS` rows; and a finished row (an
end-of-sequence token, a completed stop string, or its ``max_new_tokens``) leaves the batch, the
last running row moving into its slot of the key/value buffers (``BufferLayer``), and is reported
as it finishes. The rules of ``generate`` it reproduces: prompt ids tokenised one prompt at a
time; suffixes left-padded (``prefix + pads + suffix``, mask 0 on pads, position ids
``cumsum(mask) - 1``); each step the ``torch.argmax`` (first of equal maxima) of the float32
logits of the last position (fused with the output layer, ``_HeadArgmax``, where the logits are
exactly that layer's); stop strings checked by transformers' ``StopStringCriteria`` on the row's
prompt and output tokens, the completing token, like an end-of-sequence token, kept in the output.
Ours: each row keeps its own ``max_new_tokens`` and stop strings (``generate`` applies the batch's
maximum and union), and other tensor shapes can change the arg-max on rare near-ties
(``benchmarks/bench_first_run.py --compare-decoding`` counts them). Beams or logits processors in
``generation_config`` are refused, naming the setting (:func:`unsupported_generation_settings`).
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


# rows of the output layer per matrix product on a CPU (the fused arg-max, ``_HeadArgmax``)
HEAD_CHUNK_ROWS = 2048
# suffix rows per prefill forward (rows sorted by suffix length, so a group pads little)
PREFILL_GROUP_ROWS = 32
# causal-LM classes whose logits are exactly ``lm_head(hidden)`` (then soft-capped when the config
# says so): for these the arg-max is fused with the output layer; other classes use their forward
FUSED_HEAD_CLASSES = frozenset({
    "Gemma3ForCausalLM", "Gemma2ForCausalLM", "GemmaForCausalLM", "LlamaForCausalLM",
    "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM",
})


def _buffer_layer_class() -> type:
    """The cache layer of :func:`greedy_shared_prefix` (defined lazily: transformers is optional
    at import time)."""
    from transformers.cache_utils import CacheLayerMixin

    class BufferLayer(CacheLayerMixin):
        """Keys and values of one attention layer in buffers allocated once.

        ``keys``/``values`` are ``[rows, kv_heads, capacity, head_dim]``; a forward writes the
        new states of the batch rows ``rows`` at time index ``start`` (the past length the model
        sees, ``get_seq_length``) and attends to ``[:start + new]``. The decoder moves ``rows``
        and ``start`` between forwards; nothing is concatenated or copied per step. Masks are
        sized ``start + new`` with offset 0 for every layer: a sliding-window layer sees all
        cached positions and its mask (built from the model config's window) hides the old ones,
        the same attention as transformers' sliding-window cache, which drops them instead.
        """

        is_compileable = False
        is_croppable = False

        def __init__(self, keys: Any, values: Any, is_sliding: bool, start: int) -> None:
            super().__init__()
            self.keys, self.values = keys, values
            self.is_sliding = is_sliding
            self.is_initialized = True
            self.rows = (0, keys.shape[0])
            self.start = start

        def lazy_initialization(self, key_states: Any, value_states: Any) -> None:
            pass

        def update(self, key_states: Any, value_states: Any, *args: Any,
                   **kwargs: Any) -> tuple[Any, Any]:
            first, last = self.rows
            end = self.start + key_states.shape[-2]
            self.keys[first:last, :, self.start:end] = key_states
            self.values[first:last, :, self.start:end] = value_states
            return self.keys[first:last, :, :end], self.values[first:last, :, :end]

        def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
            return self.start + query_length, 0

        def get_seq_length(self) -> int:
            return self.start

        def get_max_length(self) -> int:
            return -1

    return BufferLayer


def _buffered_cache(model: Any, rows: int, capacity: int) -> Any:
    """An empty cache of :class:`BufferLayer` for ``rows`` rows and ``capacity`` positions, one
    layer per attention layer of the model (sliding or not, as transformers' own cache says)."""
    import torch
    from transformers import DynamicCache
    from transformers.cache_utils import Cache, DynamicLayer, DynamicSlidingWindowLayer

    buffer_layer = _buffer_layer_class()
    kinds = DynamicCache(config=model.config).layers
    for layer in kinds:
        if type(layer) not in (DynamicLayer, DynamicSlidingWindowLayer):
            raise ValueError(f"decoding 'shared-prefix' supports attention caches only; this "
                             f"model's cache has a {type(layer).__name__}")
    config = model.config.get_text_config(decoder=True)
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    dtype = next(model.parameters()).dtype
    layers = []
    for layer in kinds:
        # zeros, not empty: a masked position must hold a finite value (0 * inf is NaN)
        keys = torch.zeros((rows, heads, capacity, head_dim), dtype=dtype, device=model.device)
        layers.append(buffer_layer(keys, torch.zeros_like(keys), layer.is_sliding, 0))
    return Cache(layers=layers)


class _HeadArgmax:
    """The next token of each row: the arg-max of the model's logits at the last position.

    For :data:`FUSED_HEAD_CLASSES` the decoder (``model.get_decoder()``) gives the last hidden
    state and the output layer's weight is applied :data:`HEAD_CHUNK_ROWS` rows at a time on a
    CPU (the whole matrix elsewhere), keeping a running maximum: the 262,144 × 640 logits of a
    Gemma 3 batch are never written out, and the products stay in the CPU's caches. The first
    index among equal maxima wins, as in ``torch.argmax`` (a later chunk replaces the running
    maximum only when strictly greater). Soft-capping (``tanh(x / c) * c``, Gemma 2) is applied
    to each chunk before the comparison, exactly as the model applies it. Other model classes
    run their own forward with ``logits_to_keep=1``.
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self.fused = type(model).__name__ in FUSED_HEAD_CLASSES and (
            getattr(model.get_output_embeddings(), "bias", None) is None)
        target = model.get_decoder() if self.fused else model
        self.forward = target
        self.keyword = cache_keyword(target)
        self.softcap = getattr(model.config.get_text_config(decoder=True),
                               "final_logit_softcapping", None)
        self.chunk = HEAD_CHUNK_ROWS if model.device.type == "cpu" else None

    def run(self, cache: Any, **inputs: Any) -> Any:
        """One forward on ``inputs`` with ``cache`` (the decoder's, or the model's with
        ``logits_to_keep=1``); its output."""
        return self.forward(use_cache=True, **inputs, **{self.keyword: cache},
                            **({} if self.fused else {"logits_to_keep": 1}))

    def __call__(self, cache: Any, **inputs: Any) -> Any:
        """Run one forward on ``inputs`` with ``cache``; the arg-max token of each row."""
        import torch

        output = self.run(cache, **inputs)
        if not self.fused:
            return output.logits[:, -1].to(dtype=torch.float32).argmax(dim=-1)
        return self.argmax(output.last_hidden_state[:, -1])

    def argmax(self, hidden: Any) -> Any:
        import torch

        weight = self.model.get_output_embeddings().weight
        chunk = self.chunk or weight.shape[0]
        best = index = None
        for first in range(0, weight.shape[0], chunk):
            logits = torch.nn.functional.linear(hidden, weight[first:first + chunk])
            if self.softcap:
                logits = torch.tanh(logits / self.softcap) * self.softcap
            value, position = logits.to(dtype=torch.float32).max(dim=-1)
            if best is None:
                best, index = value, position
            else:
                better = value > best
                best = torch.where(better, value, best)
                index = torch.where(better, position + first, index)
        return index


def greedy_shared_prefix(
    model: Any,
    rows: Sequence[Sequence[int]],
    max_new_tokens: Sequence[int],
    stop_checks: Sequence[StopCheck | None],
    eos_token_ids: Sequence[int],
    pad_token_id: int,
    finished: Callable[[int], None] | None = None,
) -> list[list[int]]:
    """Greedy continuation (new token ids) of each prompt in ``rows``; see the module docstring.

    ``stop_checks[i]`` decides for row ``i`` whether its stop strings are complete, given the
    row's prompt and output ids left-padded into a 2-D tensor (a ``StopStringCriteria``; ``None``:
    no stop strings). Rows that share a check object are checked together. ``finished(n)`` is
    called at each decoding step at which ``n`` more rows have finished.
    """
    import torch

    n = len(rows)
    if n == 0:
        return []
    if not (len(max_new_tokens) == len(stop_checks) == n):
        raise ValueError("rows, max_new_tokens and stop_checks must have the same length")
    if any(len(row) == 0 for row in rows):
        raise ValueError("every prompt needs at least one token")
    device = model.device
    step = _HeadArgmax(model)
    prefix = shared_prefix_length(rows)
    lengths = [len(row) - prefix for row in rows]
    # physical row p holds prompt order[p]; rows sorted by suffix length (prefill groups)
    order = sorted(range(n), key=lambda i: lengths[i])
    width = max(lengths)
    with torch.inference_mode():
        cache = _buffered_cache(model, n, prefix + width + max(max_new_tokens))
        layers = cache.layers
        if prefix:  # once, in row 0, then copied to every row
            for layer in layers:
                layer.rows, layer.start = (0, 1), 0
            step.run(cache, input_ids=torch.tensor([list(rows[0][:prefix])], device=device))
            for layer in layers:
                layer.keys[1:, :, :prefix] = layer.keys[:1, :, :prefix]
                layer.values[1:, :, :prefix] = layer.values[:1, :, :prefix]
        mask = torch.zeros((n, prefix + width), dtype=torch.long)
        mask[:, :prefix] = 1
        longest = max(len(row) for row in rows)
        # the whole prompt of each row (left-padded), for the stop-string checks
        history = torch.full((n, longest), pad_token_id, dtype=torch.long)
        for p, i in enumerate(order):
            mask[p, prefix + width - lengths[i]:] = 1
            history[p, longest - len(rows[i]):] = torch.tensor(list(rows[i]), dtype=torch.long)
        positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
        mask, positions = mask.to(device), positions.to(device)
        # the suffixes, a group of similar lengths per forward: each group is padded to its own
        # longest suffix and written at the end of the common width (the gap stays masked)
        tokens = torch.empty(n, dtype=torch.long, device=device)
        groups = -(-n // PREFILL_GROUP_ROWS)
        size = -(-n // groups)
        for first in range(0, n, size):
            last = min(n, first + size)
            group_width = lengths[order[last - 1]]
            suffix = torch.full((last - first, group_width), pad_token_id, dtype=torch.long)
            for p in range(first, last):
                own = rows[order[p]][prefix:]
                suffix[p - first, group_width - len(own):] = torch.tensor(list(own))
            for layer in layers:
                layer.rows, layer.start = (first, last), prefix + width - group_width
            tokens[first:last] = step(cache, input_ids=suffix.to(device),
                                      attention_mask=mask[first:last],
                                      position_ids=positions[first:last, -group_width:])
        length = prefix + width  # cached positions
        last_position = positions[:, -1]
        eos = torch.tensor(sorted(set(eos_token_ids)), dtype=torch.long)
        outputs: list[list[int]] = [[] for _ in range(n)]
        active = list(order)  # original row index of each physical row
        checks = list({id(c): c for c in stop_checks if c is not None}.values())
        while True:
            tokens = tokens.cpu()
            history = torch.cat([history, tokens[:, None]], dim=1)
            for j, i in enumerate(active):
                outputs[i].append(int(tokens[j]))
            done = torch.isin(tokens, eos)
            done |= torch.tensor([len(outputs[i]) >= max_new_tokens[i] for i in active])
            for check in checks:
                members = [j for j, i in enumerate(active) if stop_checks[i] is check]
                if members:
                    done[members] |= check(history[members]).cpu()
            if bool(done.all()):
                if finished is not None:
                    finished(len(active))
                return outputs
            if bool(done.any()):
                # finished rows leave: the last running rows move into their slots, so only
                # the moved rows' cache is copied
                ended = set(done.nonzero().flatten().tolist())
                if finished is not None:
                    finished(len(ended))
                running = len(active) - len(ended)
                holes = sorted(j for j in ended if j < running)
                movers = [j for j in range(running, len(active)) if j not in ended]
                keep = list(range(running))
                for hole, mover in zip(holes, movers, strict=True):
                    keep[hole] = mover
                if holes:
                    into = torch.tensor(holes, device=device)
                    out_of = torch.tensor(movers, device=device)
                    for layer in layers:
                        layer.keys[into, :, :length] = layer.keys[out_of, :, :length]
                        layer.values[into, :, :length] = layer.values[out_of, :, :length]
                selected = torch.tensor(keep)
                active = [active[j] for j in keep]
                tokens, history = tokens[selected], history[selected]
                mask = mask[selected.to(device)]
                last_position = last_position[selected.to(device)]
            for layer in layers:
                layer.rows, layer.start = (0, len(active)), length
            mask = torch.cat([mask, mask.new_ones((len(active), 1))], dim=1)
            last_position = last_position + 1
            tokens = step(cache, input_ids=tokens[:, None].to(device), attention_mask=mask,
                          position_ids=last_position[:, None])
            length += 1


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
                 max_new_tokens: Sequence[int], stops: Sequence[tuple[str, ...]],
                 finished: Callable[[int], None] | None = None) -> list[str]:
        """The output of each text; ``finished(n)`` as ``n`` more of them are done (rows finish
        one by one within a batch)."""
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
                pad if pad is not None else 0, finished,
            )
            texts_out = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
            for i, text in zip(batch, texts_out, strict=True):
                outputs[i] = text
        return outputs
