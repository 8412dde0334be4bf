"""Runs the project's VLLMEngine inside the vLLM virtualenv for tests/test_engine_vllm.py.

Usage: ``python tests/vllm_worker.py INPUT.json OUTPUT.json`` with ``PYTHONPATH`` at the repo.

INPUT: ``{"cases": [{"model": <models.yaml entry>, "calls": [[<request>, ...], ...]}]}``, a
request being a ``GenerationRequest`` as a dict, and optionally ``"script"``: Python code run
after the cases in this process (vLLM imported once for both), with ``given`` (the whole INPUT)
in its namespace, that sets ``out`` (a JSON value). Each case loads one engine, reads
``info()``, runs each call through ``generate()`` and closes the engine. OUTPUT:
``{"cases": [...]}`` with, per case, ``info``, ``batch_size``, ``max_num_seqs`` (vLLM's
scheduler's) and one ``{"outputs": [...]}`` or ``{"error": ...}`` per call, or a load
``error``; an error is ``{"type": class name, "message": text}``; and ``"script"``: the
script's ``out``.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any


def _request(data: dict[str, Any]):
    from cultivar_assets.engines.prompts import GenerationRequest

    messages = data.get("messages")
    return GenerationRequest(**{
        **data,
        "messages": tuple(tuple(m) for m in messages) if messages is not None else None,
        "stop": tuple(data["stop"]),
    })


def _error(error: Exception) -> dict[str, str]:
    return {"type": type(error).__name__, "message": str(error)}


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    """Load the case's model once, run its calls, close it."""
    from cultivar_assets.engines.base import EngineSettings
    from cultivar_assets.engines.vllm_engine import VLLMEngine
    from cultivar_assets.specs import ModelSpec

    started = time.perf_counter()
    spec = ModelSpec.model_validate(case["model"])
    try:
        engine = VLLMEngine(spec, EngineSettings(**case.get("settings", {})))
    except Exception as error:
        return {"error": _error(error), "seconds": time.perf_counter() - started}
    # what vLLM's scheduler was configured with (engine option max_num_seqs, passed through)
    scheduler = engine.llm.llm_engine.vllm_config.scheduler_config
    result: dict[str, Any] = {"info": asdict(engine.info()), "batch_size": engine.batch_size,
                              "max_num_seqs": scheduler.max_num_seqs, "calls": []}
    try:
        for call in case["calls"]:
            try:
                result["calls"].append({"outputs": engine.generate([_request(r) for r in call])})
            except Exception as error:
                result["calls"].append({"error": _error(error)})
    finally:
        engine.close()
    result["seconds"] = time.perf_counter() - started
    return result


def main(argv: list[str]) -> None:
    source, target = Path(argv[1]), Path(argv[2])
    given = json.loads(source.read_text(encoding="utf-8"))
    output: dict[str, Any] = {"cases": [run_case(case) for case in given["cases"]]}
    if "script" in given:
        namespace: dict[str, Any] = {"given": given}
        exec(compile(given["script"], "<script>", "exec"), namespace)
        output["script"] = namespace["out"]
    target.write_text(json.dumps(output, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":  # vLLM may start worker processes that re-import this module
    main(sys.argv)
