"""The replay engine (recorded answers played back) and the demo's recording of its localiser."""

from __future__ import annotations

import json

import pytest

from cultivar_assets.construction.annotation.demo import demo_annotation_document
from cultivar_assets.construction.annotation.postedit_build import stored_task
from cultivar_assets.construction.build import build_localisation, build_selection
from cultivar_assets.construction.config import demo_annotations_dir, demo_construction
from cultivar_assets.engines import engine_registry
from cultivar_assets.engines.base import EngineLoadError, EngineSettings, Generation
from cultivar_assets.engines.prompts import GenerationRequest
from cultivar_assets.engines.replay import replay_key, write_recording
from cultivar_assets.specs import ModelSpec
from cultivar_assets.store.database import Store


def request(text: str, max_new_tokens: int = 16) -> GenerationRequest:
    return GenerationRequest(source=text, language="deu_Latn", kind="plain",
                             prompt=f"German: {text}\nEnglish:", messages=None, stop=("\n",),
                             max_new_tokens=max_new_tokens)


def engine(path) -> object:
    spec = ModelSpec(id="replayed", hf_id=None, type="LLM", family="Test", engine="replay",
                     prompt_style="source", engine_options={"answers": str(path)})
    return engine_registry().get("replay")(spec, EngineSettings())


def test_recorded_answers_come_back_with_their_usage(tmp_path):
    path = tmp_path / "answers.json"
    write_recording(path, {"engine": "transformers"}, [
        (request("Hallo"), Generation(" Hello", 7, 2), "a"),
        (request("Tschüss"), Generation(" Bye", 8, 3), "b")])
    replay = engine(path)
    out = replay.generate_detailed([request("Tschüss"), request("Hallo")])
    assert out == [Generation(" Bye", 8, 3), Generation(" Hello", 7, 2)]
    assert replay.generate([request("Hallo")]) == [" Hello"]
    assert replay.info().engine == "replay" and "recording sha256" in replay.info().engine_version


def test_a_request_that_was_not_recorded_is_an_error_naming_the_file(tmp_path):
    path = tmp_path / "answers.json"
    write_recording(path, {}, [(request("Hallo"), Generation(" Hello"), "a")])
    assert replay_key(request("Hallo")) != replay_key(request("Hallo", max_new_tokens=17))
    with pytest.raises(EngineLoadError, match=r"answers\.json holds no answer"):
        engine(path).generate([request("Hallo", max_new_tokens=17)])
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(EngineLoadError, match=r"\bbad\.json\b"):
        engine(tmp_path / "bad.json").info()


def test_the_demo_recording_gives_the_drafts_of_the_shipped_annotation_files(tmp_path,
                                                                             isolated_home):
    """Played back through the real localisation path, the recorded answers make exactly the
    drafts the shipped demo annotation files were written against (the slow demo test runs the
    model itself and compares its answers with the recording)."""
    construction = demo_construction()
    assert construction.localisation.engine == "replay"
    store = Store(tmp_path / "demo.duckdb")
    build_selection(construction.source, construction.selection, store, show_bar=False)
    run = build_localisation(construction.localisation, store).run
    assert run.n_generated == 72
    for locale in construction.localisation.locale_keys():
        task = stored_task(store, locale)
        shipped = demo_annotations_dir() / f"{task.task_id}.annotations.json"
        assert shipped.read_text("utf-8") == json.dumps(demo_annotation_document(task),
                                                        ensure_ascii=False, indent=1) + "\n"
