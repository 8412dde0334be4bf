"""Shared fixtures: an isolated CULTIVAR_HOME, tiny random models built in the test session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
FLORES_DIR = SHARED / "data" / "flores200"

TINY_VOCAB_TEXT = (
    "on monday the team won in the city and the mayor said that a new bridge opens . "
    "am montag hat die mannschaft in der stadt gewonnen und der bürgermeister sagte , "
    "English : Source : German Hindi Spanish Chinese French Italian Portuguese translate "
    "following text into reply with translation only without any explanation"
)
CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|> {{ message['content'] }} <|end|> "
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """``pytest -n N`` (pytest-xdist) distributes whole test files (``--dist loadfile``) unless
    another ``--dist`` is given: a module-scoped fixture (a browser, a built site, a scored
    database) is then built once, on the worker that runs its file. (``--dist loadgroup`` with
    ``xdist_group`` marks groups nothing under pytest 9.2: xdist 3.8 renames ``item._nodeid``,
    which pytest 9.2's ``Node.nodeid`` no longer reads.)"""
    option = config.option
    if getattr(option, "numprocesses", None) and getattr(option, "dist", "no") == "no":
        option.dist = "loadfile"
        option.loadscopereorder = False  # files go out in :data:`LONG_FILES_FIRST`'s order


#: The fast suite's longest test files, longest first, from ``pytest -n 2 --durations`` (the
#: sum of each file's setup, call and teardown times; docs/performance.md, "The test suite").
#: Under ``pytest -n N`` they are handed to the workers before every other file, so that no
#: worker is left running a long file alone at the end of the run: the files of one to three
#: tests that take seconds are listed too (the others go out by their number of tests, most
#: first, and would come last).
LONG_FILES_FIRST = (
    "test_site_browser.py", "test_secrets.py", "test_postedit_browser.py",
    "test_error_tool_browser.py", "test_runner_stale.py", "test_aggregation_streaming.py",
    "test_submissions.py", "test_site_model_parts.py", "test_bad_input.py", "test_site_fonts.py",
    "test_site_charts.py", "test_pipeline.py", "test_extension_step.py", "test_input_files.py",
    "test_demo_loop.py", "test_store_migrations.py", "test_localisation_drafts.py",
    "test_engine_seq2seq.py", "test_store_database.py", "test_site_model_card.py",
    "test_site_model_asset.py", "test_site_metrics.py", "test_site_provenance.py",
    "test_gpu_check.py", "test_shared_prefix.py", "test_automation.py",
    "test_results_automation.py", "test_evaluation_statistics.py", "test_built_dataset.py",
    "test_deploy_k8s.py", "test_postedit_build.py", "test_build_provenance.py", "test_engines.py",
    "test_bench_bootstrap.py",
)


def pytest_collection_modifyitems(config, items):
    """In a pytest-xdist worker (``pytest -n N``): the test files in the order the workers get
    them, :data:`LONG_FILES_FIRST` first, then the others by their number of tests, most first
    (pytest-xdist's own order); the tests inside a file keep their order. Every worker collects
    the same order, which ``--dist loadfile`` follows."""
    if not hasattr(config, "workerinput"):
        return
    sizes: dict[str, int] = {}
    for item in items:
        sizes[item.path.name] = sizes.get(item.path.name, 0) + 1
    rank = {name: position for position, name in enumerate(LONG_FILES_FIRST)}
    items.sort(key=lambda item: (rank.get(item.path.name, len(rank)), -sizes[item.path.name]))


def sqlite_without_fsync(connection, _record) -> None:
    """``PRAGMA synchronous = OFF`` on an SQLite connection that SQLAlchemy opens (Dagster's run,
    event-log and schedule storages): SQLite still journals every transaction, so a process that
    dies mid-write leaves a consistent database; only the ``fsync`` calls, which guard against a
    crash of the operating system, are left out."""
    import sqlite3

    if isinstance(connection, sqlite3.Connection):
        connection.execute("PRAGMA synchronous = OFF")


def pytest_configure(config):
    """Every SQLite connection that SQLAlchemy opens in the test processes goes without
    ``fsync`` (:func:`sqlite_without_fsync`): Dagster's storages commit thousands of times in a
    pipeline run, and each synced commit waits on the disk. Processes the tests start (the
    ``cultivar`` CLI, the Dagster daemon, pipeline runs in subprocesses) keep SQLite's
    default. Dagster's SQLite storages reuse one engine per database file
    (tests/dagster_engines.py), in every process that runs tests (not pytest-xdist's
    controller)."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    if not event.contains(Engine, "connect", sqlite_without_fsync):
        event.listen(Engine, "connect", sqlite_without_fsync)
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        from dagster_engines import reuse_engines

        reuse_engines()


def pytest_collection_finish(session):
    """Move every object alive after collection (the imported modules of torch, Dagster,
    transformers, …) out of the garbage collector's view (``gc.freeze``): each later collection,
    automatic or after a ``dagster_instances`` test, then scans only what the tests created."""
    import gc

    from dagster_state import track

    track()  # before any test enters a Dagster instance (no_stale_dagster_state)
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def no_stale_dagster_state(request):
    """Keep Dagster's "current defs-state storage" from pointing at a closed instance.

    Each DagsterInstance sets that context variable when entered and resets it when its exit
    stack is closed; an exit stack that is only garbage-collected later (inside another test)
    resets it to an older, deleted instance, and the next Definitions(...) then fails to open
    that instance's database. So the variable is cleared around each test, and modules that
    create instances (marked ``dagster_instances``) collect garbage after each test that left
    one entered (tests/dagster_state.py). (Dagster-internal state, Dagster 1.13.)
    """
    from dagster._core.storage.defs_state import base

    base._current_storage.set(None)
    yield
    if request.node.get_closest_marker("dagster_instances"):
        from dagster_state import collect_if_left_entered

        collect_if_left_entered()
    base._current_storage.set(None)


def isolate_home(monkeypatch: pytest.MonkeyPatch, home: Path) -> Path:
    """The environment every test runs in: CULTIVAR_HOME ``home``, no CULTIVAR_CONFIG or
    DAGSTER_HOME, no COLUMNS (the CLI's width is its own for output that is not a terminal;
    pytest-xdist's workers have COLUMNS=80 in their environment), the Hugging Face Hub offline,
    no npm.
    Session fixtures that run the pipeline set it up themselves (they are built before the
    tests' own :func:`isolated_home`)."""
    monkeypatch.setenv("CULTIVAR_HOME", str(home))
    monkeypatch.delenv("CULTIVAR_CONFIG", raising=False)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("CULTIVAR_NPM", "")  # no test runs npm (the site's Query page: cached)
    return home


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    """Every test gets its own CULTIVAR_HOME; no test touches the user's ~/.cultivar."""
    return isolate_home(monkeypatch, tmp_path_factory.mktemp("cultivar_home"))


def tiny_bpe_tokenizer(specials: list[str], eos_template: bool = False):
    """A byte-level BPE tokenizer trained on a few words: (tokenizer, vocabulary size)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE(unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    core.train_from_iterator([TINY_VOCAB_TEXT] * 4, trainer=trainer)
    if eos_template:  # T5 appends </s>
        core.post_processor = processors.TemplateProcessing(
            single="$A </s>", special_tokens=[("</s>", core.token_to_id("</s>"))]
        )
    extra = [s for s in specials if s not in ("<s>", "<pad>", "</s>", "<unk>")]
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="</s>", pad_token="<pad>", unk_token="<unk>",
        extra_special_tokens=extra,
        **({"bos_token": "<s>"} if "<s>" in specials else {}),
    )
    return tokenizer, len(core.get_vocab())


def build_tiny_model(folder: Path, chat_template: str | None) -> Path:
    """A 2-layer random Llama with a byte-level BPE tokenizer, saved like a Hub checkout."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    specials = ["<pad>", "<s>", "</s>", "<unk>", "<|user|>", "<|assistant|>", "<|end|>"]
    tokenizer, vocabulary_size = tiny_bpe_tokenizer(specials)
    if chat_template:
        tokenizer.chat_template = chat_template
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=vocabulary_size, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, head_dim=64, max_position_embeddings=4096,
        bos_token_id=1, eos_token_id=2, pad_token_id=0, tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny_llama"), chat_template=None)


@pytest.fixture(scope="session")
def tiny_chat_model_dir(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny_llama_chat"), CHAT_TEMPLATE)


def write_models_file(path: Path, entries: list[dict]) -> Path:
    import yaml

    path.write_text(yaml.safe_dump({"models": entries}, sort_keys=False), encoding="utf-8")
    return path


def tiny_entry(model_id: str, folder: Path, prompt_style: str, **extra) -> dict:
    entry = {
        "id": model_id, "hf_id": str(folder), "revision": None, "type": "LLM",
        "family": "Tiny", "params_total_b": 0.0001, "params_active_b": 0.0001,
        "engine": "transformers", "prompt_style": prompt_style,
        "engine_options": {"max_new_tokens": 6, "batch_size": 16},
    }
    entry.update(extra)
    return entry


COPY_ENTRY = {"id": "copy-source-baseline", "type": "baseline", "family": "Baseline",
              "engine": "copy-source", "prompt_style": "source"}


def tiny_model_entries(tiny_model_dir: Path, tiny_chat_model_dir: Path) -> list[dict]:
    """Three systems: a tiny base model (few-shot), a tiny chat model, and the copy baseline."""
    return [tiny_entry("tiny-base", tiny_model_dir, "base-fewshot"),
            tiny_entry("tiny-chat", tiny_chat_model_dir, "chat-instruction"),
            COPY_ENTRY]


@pytest.fixture
def tiny_models_file(tmp_path, tiny_model_dir, tiny_chat_model_dir) -> Path:
    """A models file of :func:`tiny_model_entries`' three systems."""
    return write_models_file(tmp_path / "models.yaml",
                             tiny_model_entries(tiny_model_dir, tiny_chat_model_dir))


def copy_database(database: Path, folder: Path) -> Path:
    """A copy of ``database`` and its storage root (``<stem>-storage`` beside it, where it
    exists) in ``folder``: the copied database's path."""
    import shutil

    copy = folder / database.name
    shutil.copyfile(database, copy)
    storage = database.with_name(f"{database.stem}-storage")
    if storage.is_dir():
        shutil.copytree(storage, copy.with_name(storage.name))
    return copy


def cpu_count() -> int:
    return os.cpu_count() or 1


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium through Playwright (tests/browser_helpers.py), shared by consecutive
    test modules that use it (:func:`browser_helpers.shared_chromium`; every test opens its
    pages in a browser context of its own, a fresh profile, and closes it). It is closed after
    the last test of a run of such modules (:func:`pytest_runtest_teardown`): Playwright's
    synchronous API keeps an event loop running, in which ``asyncio.run`` refuses to run."""
    from browser_helpers import shared_chromium

    return shared_chromium()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last test of a module: the shared Chromium closed unless the next module's
    first test uses it (a module's tests run with the same browser throughout)."""
    try:
        return (yield)
    finally:
        if nextitem is None or (nextitem.path != item.path
                                and "browser" not in nextitem.fixturenames):
            from browser_helpers import close_shared_chromium

            close_shared_chromium()


@pytest.fixture
def homes(tmp_path, monkeypatch, isolated_home):
    """The test's CULTIVAR_HOME and a DAGSTER_HOME of its own (searched for leaked secrets)."""
    dagster_home = tmp_path / "dagster-home"
    dagster_home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home))
    return isolated_home, dagster_home


@pytest.fixture(scope="session")
def copy_baseline_run(tmp_path_factory):
    """A finished ``cultivar run`` of the copy baseline on a local copy of the demo data, made
    once a session, whatever the number of pytest-xdist workers (``tests/pipeline_helpers.py``):
    tests read it, and start from copies of it (:func:`copy_baseline_home`), never change it."""
    from pipeline_helpers import shared_copy_baseline_run

    return shared_copy_baseline_run(tmp_path_factory)


@pytest.fixture
def copy_baseline_home(copy_baseline_run, tmp_path, monkeypatch, isolated_home):
    """A copy of :func:`copy_baseline_run` in ``tmp_path/run``, whose CULTIVAR_HOME and
    DAGSTER_HOME the test runs with: Dagster reports every asset of it fresh."""
    return copy_baseline_run.copy(tmp_path / "run").enter(monkeypatch)


def copy_baseline_settings(tmp_path: Path):
    """Settings of a pipeline run of the copy baseline on a copy of the demo data (data kind
    local; BLEU 13a, 50 bootstrap replicates), its database and models file in ``tmp_path``."""
    import shutil

    from cultivar_assets.data.sources import DataConfig, demo_dataset_dir
    from cultivar_assets.metrics.metric_config import MetricConfig
    from cultivar_assets.settings import Settings

    data = tmp_path / "data"
    shutil.copytree(demo_dataset_dir(), data)
    models = write_models_file(tmp_path / "models.yaml", [COPY_ENTRY])
    return Settings(database=str(tmp_path / "results.duckdb"), models_file=str(models),
                    models=[COPY_ENTRY["id"]],
                    data=DataConfig(kind="local", cultivar_path=str(data)),
                    metrics=MetricConfig(bleu_tokenize="13a", bootstrap_replicates=50))


def copy_baseline_config_file(tmp_path: Path, bootstrap_replicates: int = 50) -> Path:
    """A settings file (``tmp_path/cultivar.yaml``) for ``cultivar`` commands: the copy baseline
    on the demo data (BLEU 13a), with its models file, database, site (no Query page), charts
    and dataset folder in ``tmp_path``."""
    import yaml

    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"models": [COPY_ENTRY]}), "utf-8")
    config = tmp_path / "cultivar.yaml"
    config.write_text(yaml.safe_dump({
        "database": str(tmp_path / "results.duckdb"), "models_file": str(models),
        "models": [COPY_ENTRY["id"]], "data": {"kind": "demo"},
        "metrics": {"bleu_tokenize": "13a", "bootstrap_replicates": bootstrap_replicates},
        "site": {"output_dir": str(tmp_path / "site"), "charts_dir": str(tmp_path / "charts"),
                 "query_page": "off"},
        "publish": {"folder": str(tmp_path / "hub")}}), "utf-8")
    return config


def install_metadata(folder: Path, name: str, entry_points: dict[str, dict[str, str]]) -> None:
    """What ``pip install`` leaves for a distribution's entry points: ``<name>-0.1.dist-info``
    with its ``METADATA`` and ``entry_points.txt`` (the packaging spec's format) in ``folder``,
    a folder on ``sys.path``."""
    info = folder / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in points.items())
        for group, points in entry_points.items()))


@pytest.fixture(scope="session")
def hostile_store_copy(tmp_path_factory):
    """Copies of ``site_helpers.hostile_store``'s database, built once a session whatever the
    number of pytest-xdist workers (``site_helpers.shared_hostile_store``, in the folder of every
    worker's base folder): ``hostile_store_copy(root)`` is a :class:`Store` of a fresh copy in
    ``root``, which the test may change."""
    from site_helpers import copy_hostile_store, shared_hostile_store

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # pytest-<n>, shared by the session's workers
    shared = shared_hostile_store(base)
    return lambda root: copy_hostile_store(shared, root)


#: The site builder's caches under ``$CULTIVAR_HOME/cache`` that hold only functions of their
#: keys: vl-convert's SVGs (keyed by the spec and what draws it: ``site/vl_cache.py``) and the
#: compiled Jinja templates (keyed by their source: ``site/pages.py``).
SITE_CACHES = ("vl-convert", "jinja")


@pytest.fixture(scope="session")
def session_site_caches(tmp_path_factory) -> Path:
    """One folder per :data:`SITE_CACHES` name, shared by the session's processes (in the
    folder of every pytest-xdist worker's base folder). Both caches write each file under a
    temporary name and rename it, so processes that fill them at once never read half a file."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # pytest-<n>, shared by the session's workers
    folder = base / "site-caches"
    for name in SITE_CACHES:
        (folder / name).mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def shared_site_caches(session_site_caches, isolated_home) -> Path:
    """The test's CULTIVAR_HOME with its :data:`SITE_CACHES` linked to
    :func:`session_site_caches`: a site built in the test draws only the charts and compiles
    only the templates that no earlier build of the session did (every other file of the home
    stays the test's own)."""
    cache = isolated_home / "cache"
    cache.mkdir(exist_ok=True)
    for name in SITE_CACHES:
        (cache / name).symlink_to(session_site_caches / name, target_is_directory=True)
    return isolated_home


@pytest.fixture(scope="module")
def one_torch_thread():
    """Torch's intra-op work in one thread for the module's tests, then the number it had
    (:func:`pipeline_helpers.one_torch_thread`): the tiny models' matrices are too small to
    split, and on a machine whose cores every pytest-xdist worker keeps busy the threads that
    wait for work only burn CPU time."""
    from pipeline_helpers import one_torch_thread as torch_on_one_thread

    with torch_on_one_thread():
        yield


@pytest.fixture(scope="module")
def one_blas_thread():
    """NumPy's BLAS in one thread for the module's tests (``threadpoolctl``, as the statistics
    hold it while their own threads run): the tests' products are small, and on a machine whose
    cores every pytest-xdist worker keeps busy the threads that wait for work only burn CPU
    time."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield
