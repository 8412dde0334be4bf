"""Converting a Gemma 3 (text) GGUF file into a transformers checkpoint, fast.

:func:`convert_gemma3_gguf` (``weights.py``'s one-time de-quantisation of the demo model) writes
the same checkpoint as ``AutoModelForCausalLM.from_pretrained(folder, gguf_file=...)`` then
``save_pretrained`` (the same tensors bit for bit, configuration and tokenizer;
``tests/test_gguf_gemma3.py`` checks it on the real package), reading the metadata once with
``struct`` (:func:`read_gguf`; the vocabulary only counted) where transformers parses it three
times with ``gguf.GGUFReader``; tensors go through ``gguf.quants.dequantize``, the tokenizer
through transformers' own GGUF path. The mapping it reproduces (transformers' for ``gemma3``):
configuration (``Gemma3TextConfig``) from ``gemma3.context_length``, ``embedding_length``,
``block_count``, ``feed_forward_length``, ``attention.head_count``, ``attention.head_count_kv``,
``attention.key_length``, ``attention.layer_norm_rms_epsilon``, ``attention.sliding_window``,
``rope.freq_base`` (the full-attention layers' ``rope_theta``), the ``tokenizer.ggml.*_token_id``
values, the vocabulary's length and ``general.name`` (:func:`gemma3_config`); embeddings tied when
the file has no ``output.weight``; tensors ``token_embd`` → ``model.embed_tokens``,
``output_norm`` → ``model.norm``, ``blk.N.<part>`` → ``model.layers.N.<module>``
(:data:`LAYER_TENSORS`), every norm weight stored by llama.cpp as ``1 + w`` less ``1`` in float32.
Any tensor or metadata key the mapping does not know is an error naming it, never skipped.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32  # llama.cpp's, when general.alignment is absent
# metadata value types (GGUF spec): fixed-size scalars; 8 = string, 9 = array
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
            11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9

LAYER_TENSORS = {
    "attn_norm": "input_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm",
    "post_attention_norm": "post_attention_layernorm",
    "ffn_norm": "pre_feedforward_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
    "post_ffw_norm": "post_feedforward_layernorm",
}
MODEL_TENSORS = {"token_embd": "model.embed_tokens", "output_norm": "model.norm",
                 "output": "lm_head"}


class GgufError(ValueError):
    """The file is not a GGUF file this converter can read."""


@dataclass(frozen=True)
class GgufTensor:
    name: str
    dims: tuple[int, ...]  # GGUF order: fastest-moving first
    ggml_type: int
    offset: int  # from the start of the data section


@dataclass(frozen=True)
class GgufFile:
    path: Path
    metadata: dict[str, Any]  # string arrays are given as their length
    tensors: tuple[GgufTensor, ...]
    data_start: int

    def array(self, tensor: GgufTensor) -> np.ndarray:
        """The tensor de-quantised to float32, in torch's (row-major) shape."""
        from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, quant_shape_to_byte_shape
        from gguf.quants import dequantize

        qtype = GGMLQuantizationType(tensor.ggml_type)
        block, size = GGML_QUANT_SIZES[qtype]
        count = int(np.prod(tensor.dims))
        shape = tuple(reversed(tensor.dims))
        blob = np.memmap(self.path, mode="r", dtype=np.uint8,
                         offset=self.data_start + tensor.offset, shape=(count * size // block,))
        if qtype == GGMLQuantizationType.F32:
            data = blob.view(np.float32).reshape(shape)
        elif qtype == GGMLQuantizationType.F16:
            data = blob.view(np.float16).reshape(shape)
        else:
            data = blob.reshape(quant_shape_to_byte_shape(shape, qtype))
        return np.asarray(dequantize(data, qtype), dtype=np.float32).reshape(shape)


def read_gguf(path: str | Path) -> GgufFile:
    """The metadata and tensor table of a GGUF (v2/v3) file; no tensor data is read."""
    path = Path(path)
    blob = np.memmap(path, mode="r", dtype=np.uint8)
    if bytes(blob[:4]) != GGUF_MAGIC:
        raise GgufError(f"{path} is not a GGUF file (no GGUF magic bytes)")
    version, n_tensors, n_keys = struct.unpack_from("<IQQ", blob, 4)
    if version not in GGUF_VERSIONS:
        raise GgufError(f"{path}: GGUF version {version} is not supported (only 2 and 3)")
    position = 24
    metadata: dict[str, Any] = {}
    for _ in range(n_keys):
        key, position = _string(blob, position)
        (kind,) = struct.unpack_from("<I", blob, position)
        metadata[key], position = _value(blob, position + 4, kind, path, key)
    tensors = []
    for _ in range(n_tensors):
        name, position = _string(blob, position)
        (n_dims,) = struct.unpack_from("<I", blob, position)
        dims = struct.unpack_from(f"<{n_dims}Q", blob, position + 4)
        ggml_type, offset = struct.unpack_from("<IQ", blob, position + 4 + 8 * n_dims)
        position += 4 + 8 * n_dims + 12
        tensors.append(GgufTensor(name, tuple(dims), ggml_type, offset))
    alignment = int(metadata.get("general.alignment", DEFAULT_ALIGNMENT))
    data_start = (position + alignment - 1) // alignment * alignment
    return GgufFile(path, metadata, tuple(tensors), data_start)


def _string(blob: np.ndarray, position: int) -> tuple[str, int]:
    (length,) = struct.unpack_from("<Q", blob, position)
    start = position + 8
    return bytes(blob[start:start + length]).decode("utf-8"), start + length


def _value(blob: np.ndarray, position: int, kind: int, path: Path, key: str) -> tuple[Any, int]:
    if kind in _SCALARS:
        (value,) = struct.unpack_from(_SCALARS[kind], blob, position)
        return value, position + struct.calcsize(_SCALARS[kind])
    if kind == STRING:
        return _string(blob, position)
    if kind == ARRAY:
        item, count = struct.unpack_from("<IQ", blob, position)
        position += 12
        if item in _SCALARS:
            fmt = _SCALARS[item]
            values = struct.unpack_from(f"<{count}{fmt[1]}", blob, position)
            return list(values), position + count * struct.calcsize(fmt)
        if item == STRING:  # the vocabulary: walked over and counted (transformers reads it)
            for _ in range(count):
                (length,) = struct.unpack_from("<Q", blob, position)
                position += 8 + length
            return count, position
    raise GgufError(f"{path}: metadata key {key!r} has a value type ({kind}) this reader "
                    "does not know")


def gemma3_config(gguf: GgufFile):
    """The ``Gemma3TextConfig`` of a Gemma 3 GGUF file: each field from the metadata key that
    transformers' GGUF conversion maps to it (below); a missing key is an error naming it."""
    from transformers import Gemma3TextConfig

    meta = gguf.metadata
    if meta.get("general.architecture") != "gemma3":
        raise GgufError(f"{gguf.path} is not a Gemma 3 model "
                        f"(general.architecture = {meta.get('general.architecture')!r})")

    def get(key: str) -> Any:
        if key not in meta:
            raise GgufError(f"{gguf.path} has no metadata key {key!r}")
        return meta[key]

    config = Gemma3TextConfig(
        vocab_size=int(get("tokenizer.ggml.tokens")),
        hidden_size=get("gemma3.embedding_length"),
        intermediate_size=get("gemma3.feed_forward_length"),
        num_hidden_layers=get("gemma3.block_count"),
        num_attention_heads=get("gemma3.attention.head_count"),
        num_key_value_heads=get("gemma3.attention.head_count_kv"),
        head_dim=get("gemma3.attention.key_length"),
        max_position_embeddings=get("gemma3.context_length"),
        rms_norm_eps=get("gemma3.attention.layer_norm_rms_epsilon"),
        sliding_window=get("gemma3.attention.sliding_window"),
        bos_token_id=get("tokenizer.ggml.bos_token_id"),
        eos_token_id=get("tokenizer.ggml.eos_token_id"),
        pad_token_id=get("tokenizer.ggml.padding_token_id"),
        unk_token_id=get("tokenizer.ggml.unknown_token_id"),
        tie_word_embeddings=all(t.name != "output.weight" for t in gguf.tensors),
    )
    rope = getattr(config, "rope_parameters", None)
    if isinstance(rope, dict) and "full_attention" in rope:  # transformers 5
        rope["full_attention"]["rope_theta"] = get("gemma3.rope.freq_base")
    else:  # transformers 4
        config.rope_theta = get("gemma3.rope.freq_base")
    if "general.name" in meta:  # transformers keeps it under this key
        config._model_name_or_path = meta["general.name"]
    config.architectures = ["Gemma3ForCausalLM"]
    return config


def hf_tensor_name(gguf_name: str) -> str:
    """``blk.3.attn_q.weight`` → ``model.layers.3.self_attn.q_proj.weight``; unknown: error."""
    stem, _, kind = gguf_name.rpartition(".")
    parts = stem.split(".")
    if len(parts) == 1 and parts[0] in MODEL_TENSORS:
        return f"{MODEL_TENSORS[parts[0]]}.{kind}"
    if len(parts) == 3 and parts[0] == "blk" and parts[1].isdigit() and parts[2] in LAYER_TENSORS:
        return f"model.layers.{parts[1]}.{LAYER_TENSORS[parts[2]]}.{kind}"
    raise GgufError(f"unknown Gemma 3 tensor {gguf_name!r}")


def gemma3_state_dict(gguf: GgufFile) -> dict[str, Any]:
    """Every tensor of the file, de-quantised to float32 and renamed; norms minus one."""
    import torch
    from tqdm import tqdm

    state = {}
    for tensor in tqdm(gguf.tensors, desc="de-quantising GGUF tensors", unit="tensor",
                       leave=False):
        values = gguf.array(tensor)
        if "norm" in tensor.name:
            values = values - 1
        state[hf_tensor_name(tensor.name)] = torch.from_numpy(np.copy(values))
    return state


def convert_gemma3_gguf(gguf_path: str | Path, out_dir: str | Path) -> Path:
    """Write a transformers checkpoint (config, safetensors, tokenizer) of a Gemma 3 GGUF file."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    gguf_path, out_dir = Path(gguf_path), Path(out_dir)
    gguf = read_gguf(gguf_path)
    config = gemma3_config(gguf)
    state = gemma3_state_dict(gguf)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    missing = [name for name in missing if not (config.tie_word_embeddings
                                                and name == "lm_head.weight")]
    if missing or unexpected:
        raise GgufError(f"{gguf_path}: tensors missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    model.generation_config.pad_token_id = config.pad_token_id
    model.save_pretrained(out_dir)
    # the tokenizers-backed class (its name in transformers 4; an alias of GemmaTokenizer in 5)
    tokenizer = transformers.GemmaTokenizerFast.from_pretrained(gguf_path.parent,
                                                                 gguf_file=gguf_path.name)
    tokenizer.save_pretrained(out_dir)
    return out_dir
