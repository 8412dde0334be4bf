"""docs/extending.md's recipes, followed step by step with the page's own code and YAML blocks.

Each test takes its blocks from the page (doc_helpers.code_block_after), so the page and the test
cannot drift, and runs the function or command the recipe names.
"""

from __future__ import annotations

import csv
import io
import sys
import tomllib
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest
import yaml
from conftest import install_metadata, write_models_file
from doc_helpers import code_block_after

from cultivar_assets.cli import main
from cultivar_assets.data import locales as locales_module
from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.engines import engine_registry
from cultivar_assets.metrics.configured import score_corpus
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.registry import metric_registry
from cultivar_assets.models import load_models
from cultivar_assets.settings import load_settings
from cultivar_assets.store.database import Store
from cultivar_assets.store.records import read_test_sets, write_dataset
from cultivar_assets.translation import translate

PAGE = "extending"


@contextmanager
def recipe_package(tmp_path, monkeypatch, heading: str, module: str, distribution: str,
                   registry) -> Iterator[None]:
    """Steps 1 and 2 of a registry recipe: the page's Python block after ``heading`` as the
    package's module ``module``, its pyproject.toml entry points installed as ``distribution``
    and ``registry`` rebuilt with them; afterwards the registry is the package's own again."""
    # 1. the code, as the page writes it, in a module of its own (the package's)
    (tmp_path / f"{module}.py").write_text(code_block_after(PAGE, heading, "python"), "utf-8")
    # 2. the package's entry point, from the page's pyproject.toml block, installed
    declared = tomllib.loads(code_block_after(PAGE, heading, "toml"))
    install_metadata(tmp_path, distribution, declared["project"]["entry-points"])
    registry.cache_clear()
    try:
        with monkeypatch.context() as patch:
            patch.syspath_prepend(str(tmp_path))
            yield
    finally:
        registry.cache_clear()  # the next test's registry is the package's own
        sys.modules.pop(module, None)


def test_recipe_new_engine(tmp_path, monkeypatch):
    with recipe_package(tmp_path, monkeypatch, "## A new engine", "shout_engine", "shout-engine",
                        engine_registry):
        assert "shout" in engine_registry()
        # 3. the model entry, as the page writes it
        entries = yaml.safe_load(code_block_after(PAGE, "## A new engine", "yaml"))
        models = load_models(write_models_file(tmp_path / "models.yaml", entries))
        spec = models.get("shout-baseline")
        assert spec.engine == "shout"
        # 4. a run: the demo's test sets translated through the new engine
        store = Store(tmp_path / "db.duckdb")
        write_dataset(store, load_benchmark(DataConfig()))
        test_sets = read_test_sets(store)
        run = translate(spec, test_sets, cache_dir=tmp_path / "cache", show_progress_bar=False)
    assert len(run.rows) == sum(len(t.segments) for t in test_sets) > 0
    assert all(row.raw_output == row.source.upper() for row in run.rows)
    assert run.info.engine == "shout"


def test_an_engine_entry_point_may_not_take_a_built_in_name(tmp_path, monkeypatch):
    """A distribution that declares an engine under a built-in name is refused, naming it (the
    built-in engine is not silently replaced)."""
    install_metadata(tmp_path, "rogue-engines",
                     {"cultivar.engines": {"vllm": "rogue:Engine", "fine": "rogue:Fine"}})
    engine_registry.cache_clear()
    try:
        with monkeypatch.context() as patch:
            patch.syspath_prepend(str(tmp_path))
            with pytest.raises(ValueError,
                               match=r"'vllm'.*\brogue-engines\b"):
                engine_registry()
    finally:
        engine_registry.cache_clear()
    assert engine_registry().get("vllm").__name__ == "VLLMEngine"  # without the distribution


def test_recipe_new_metric(tmp_path, monkeypatch, capsys):
    with recipe_package(tmp_path, monkeypatch, "## A new metric", "length_ratio_metric",
                        "length-ratio-metric", metric_registry):
        # 3. a test set scored through the registry, with the page's own code
        exec(code_block_after(PAGE, "3. Score a test set with it", "python"), {})
        assert capsys.readouterr().out == "0.75 [0.5 1. ] length_ratio|v:1\n"
        references = ["Der Hund", "", "ein Haus"]
        result = score_corpus("length_ratio", references, ["Der Hund bellt", "", "Haus"])
        assert result.segments.tolist() == [8 / 14, 1.0, 4 / 8]
        assert metric_registry().get("length_ratio").higher_is_better
        # 4. the settings' list, as the page writes it, is accepted
        settings = yaml.safe_load(code_block_after(PAGE, "4. List it in the settings", "yaml"))
        assert MetricConfig(**settings["metrics"]).metrics == ["bleu", "chrf", "length_ratio"]
    assert "length_ratio" not in metric_registry()


def test_recipe_comet_wrapper_with_a_stand_in_comet(monkeypatch):
    """The COMET block, run against a stand-in ``comet`` module (no weights here): the wrapper
    passes src/mt/ref triples and returns COMET's per-segment scores."""
    calls = []

    class Model:
        def predict(self, data, **options):
            calls.append((data, options))
            return types.SimpleNamespace(scores=[0.5 + 0.1 * i for i in range(len(data))])

    fake = types.ModuleType("comet")

    def download_model(model, saving_directory=None, local_files_only=False):
        calls.append(("download", model, saving_directory, local_files_only))
        return f"{saving_directory}/checkpoints/model.ckpt"

    def load_from_checkpoint(path, local_files_only=False):
        calls.append(("load", path, local_files_only))
        return Model()

    fake.download_model, fake.load_from_checkpoint = download_model, load_from_checkpoint
    monkeypatch.setitem(sys.modules, "comet", fake)
    namespace: dict = {}
    exec(code_block_after(PAGE, "### COMET as a segment-score metric", "python"), namespace)
    comet = namespace["COMET"]
    assert (comet.name, comet.kind, comet.signature.startswith("comet|model:")) == (
        "comet", "segment scores", True)
    scores = comet.segment_scores(["r1", "r2"], ["h1", "h2"], sources=["s1", "s2"])
    assert scores.tolist() == [0.5, 0.6] and comet.corpus_score(scores) == 0.55
    assert calls[:2] == [("download", "Unbabel/wmt22-comet-da", "/models/comet", False),
                         ("load", "/models/comet/checkpoints/model.ckpt", False)]
    assert calls[2][0] == [{"src": "s1", "mt": "h1", "ref": "r1"},
                           {"src": "s2", "mt": "h2", "ref": "r2"}]
    with pytest.raises(ValueError, match="needs the source sentences"):
        comet.segment_scores(["r"], ["h"])


def test_recipe_new_locale(tmp_path, monkeypatch, capsys):
    # 1. the row, appended to a copy of the registry's CSV
    row = code_block_after(PAGE, "## A new locale", "csv").strip()
    bundled = (Path(locales_module.__file__).parent / "locales.csv").read_text("utf-8")
    header = next(csv.reader(io.StringIO(bundled)))
    assert len(next(csv.reader([row]))) == len(header)  # every column of the registry
    (tmp_path / "locales.csv").write_text(bundled.rstrip("\n") + "\n" + row + "\n", "utf-8")

    class Files:  # importlib.resources.files, pointed at the copy
        @staticmethod
        def files(_package):
            return tmp_path

    monkeypatch.setattr(locales_module, "resources", Files)
    locales_module.locale_registry.cache_clear()
    try:
        # 2. `cultivar locales` lists it; its test sets are named as the page says
        assert main(["locales"]) == 0
        assert "deu_Latn_Austria" in capsys.readouterr().out
        locale = locales_module.get_locale("deu_Latn_Austria")
        assert (locale.location, locale.location_short, locale.official_or_de_facto) == (
            "Austria", "AT", True)
        assert locale.test_set == "cultivar_deu_Latn_Austria"
        assert locales_module.flores_test_set_name(locale.source_language) == "flores_deu_Latn"
        assert "deu_Latn_Austria" in locales_module.source_languages()["deu_Latn"][-1].key
    finally:
        locales_module.locale_registry.cache_clear()


def test_recipe_new_source_benchmark(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CULTIVAR_HOME", str(tmp_path / "home"))
    # 1. the table and 2. the settings, as the page writes them
    (tmp_path / "bench.tsv").write_text(
        code_block_after(PAGE, "## A new source benchmark", "tsv"), "utf-8")
    (tmp_path / "cultivar.yaml").write_text(
        code_block_after(PAGE, "2. Name it in the settings (`cultivar.yaml`)", "yaml"), "utf-8")
    # 3. the selection, through the CLI
    assert main(["--config", "cultivar.yaml", "build", "select"]) == 0
    database = load_settings(tmp_path / "cultivar.yaml").database_path
    with duckdb.connect(str(database), read_only=True) as con:
        rows = con.execute("SELECT instance_id, n_entities >= 2, candidate, selected "
                           "FROM selection_candidates ORDER BY instance_id").fetchall()
    # "It rained." names no entity; the other two name at least two each
    assert rows == [(0, True, True, True), (1, True, True, True), (2, False, False, False)]


def test_recipe_new_prompt_template(tmp_path):
    from cultivar_assets.construction.config import ConstructionConfig
    from cultivar_assets.construction.localisation.prompts import get_prompt, prompt_values

    # 1. the template file and 2. the settings naming it, as the page writes them
    (tmp_path / "my_prompts.yaml").write_text(
        code_block_after(PAGE, "## A new prompt template", "yaml"), "utf-8")
    step2 = "Name it in the settings:\n\n   ```yaml\n   construction:\n     localisation:"
    settings = yaml.safe_load(code_block_after(PAGE, step2, "yaml"))
    localisation = ConstructionConfig.model_validate(settings["construction"]).localisation
    assert localisation.prompt == "terse-chat"
    # 3. what `build localise` does with it: the template from the file, filled for a locale
    prompt = get_prompt(localisation.prompt, tmp_path / localisation.prompts_file)
    values = prompt_values("deu_Latn_Switzerland", "Der Rhein fließt durch Basel.",
                           "The Rhine flows through Basel.")
    request = prompt.request(values, max_new_tokens=64)
    assert request.messages[0] == ("system", "Localise this German-English sentence pair to "
                                   "Switzerland by changing its named entities. Answer in the "
                                   "same two-line format.")
    assert request.messages[-1] == ("user", "German: Der Rhein fließt durch Basel.\n"
                                    "English: The Rhine flows through Basel.")
    assert len(prompt.prompt_hash) == 64
    # a template missing a placeholder is refused, naming the template
    broken = (tmp_path / "my_prompts.yaml").read_text("utf-8").replace("{src_location}", "there")
    (tmp_path / "broken.yaml").write_text(broken, "utf-8")
    with pytest.raises(Exception, match="terse-chat"):
        get_prompt("terse-chat", tmp_path / "broken.yaml")
