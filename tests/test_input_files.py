"""Inputs that would hang or exhaust memory are refused before they are walked or read.

- A YAML alias bomb (a few hundred bytes whose nested aliases stand for hundreds of millions of
  values) in a settings file (inside a section, as ``models:``, across top-level keys) or in
  ``models.yaml`` is refused by the YAML reader, before the secrets walk or validation.
- Every user-supplied file is read only when it is a regular file within its size limit
  (``config_files.read_input_file``): ``/dev/zero``, a link to it and a FIFO are refused with a
  one-line message naming the file, by every reader (settings, models.yaml, a submission's
  manifest and outputs, annotation and error-annotation files, lm-eval samples, recorded
  answers).
- Folders are read only for the files they are documented to hold: lm-eval's output folder for
  its samples files (in it, or in a folder directly inside it); the error-annotation folder's
  digest for its ``*.errors.json``; a folder's digest reads no FIFO, device or link to one.

Each reader runs in a child process with a time limit and a memory limit, so that a reader that
hangs or grows fails the test instead of stopping the suite.
"""

from __future__ import annotations

import itertools
import os
import re
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHILD_SECONDS = 60
CHILD_MEMORY = 2 * 1024 ** 3


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))


def run_child(code: str, tmp_path: Path) -> str:
    """Run ``code`` in a fresh Python (memory and time limited); what it printed (stdout, then
    stderr). A child that runs out of time or memory or fails fails the test."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CULTIVAR_HOME": str(tmp_path / "home")}
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                              capture_output=True, text=True, timeout=CHILD_SECONDS,
                              preexec_fn=_limit_memory, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the reader did not finish within {CHILD_SECONDS} s")
    assert done.returncode == 0, done.stdout + done.stderr
    return (done.stdout + done.stderr).strip()


# --- YAML alias bombs ------------------------------------------------------------------------

LEVELS = "abcdefghi"


def bomb(indent: str = "") -> str:
    """Nine levels of nine aliases each: 9**9 (387 million) strings once expanded."""
    lines = [f'{indent}a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for previous, name in itertools.pairwise(LEVELS):
        lines.append(f"{indent}{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    return "\n".join(lines) + "\n"


BOMBS = {
    "settings: inside a section": ("settings", "site:\n  extra:\n" + bomb("    ")),
    "settings: as models": ("settings", "anchors:\n" + bomb("  ") + "models: *i\n"),
    "settings: across top-level keys": ("settings", bomb()),
    "models.yaml": ("models", "anchors:\n" + bomb("  ") + "models:\n- id: x\n  engine_options:"
                              "\n    extra_body: *i\n"),
}


@pytest.mark.parametrize("case", list(BOMBS))
def test_a_yaml_alias_bomb_is_refused_before_it_is_walked(case, tmp_path):
    kind, text = BOMBS[case]
    assert len(text.encode()) < 800
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    loader = ("from cultivar_assets.settings import load_settings as load, SettingsError as E"
              if kind == "settings" else
              "from cultivar_assets.models import load_models as load, ModelRegistryError as E")
    printed = run_child(f"""
        {loader}
        try:
            load({str(path)!r})
        except E as error:
            print(error)
        else:
            print("read")
        """, tmp_path)
    assert printed.startswith(str(path) if kind == "settings" else f"model registry {path}") \
        or str(path) in printed.splitlines()[0], printed
    assert "aliases" in printed and "10000" in printed
    assert len(printed.splitlines()) == 1, printed


def test_a_yaml_alias_that_holds_itself_is_refused(tmp_path):
    path = tmp_path / "cycle.yaml"
    path.write_text("site: &a\n  extra: [*a]\n")
    printed = run_child(f"""
        from cultivar_assets.settings import load_settings, SettingsError
        try:
            load_settings({str(path)!r})
        except SettingsError as error:
            print(error)
        """, tmp_path)
    assert printed.startswith(f"settings file {path}: line 1: "), printed
    assert "alias" in printed and len(printed.splitlines()) == 1, printed


def test_a_few_aliases_are_still_read(tmp_path):
    from cultivar_assets.config_files import load_yaml_text

    text = "base: &b {max_retries: 0, timeout: 5}\none: *b\ntwo: *b\n"
    assert load_yaml_text(text, "x") == {"base": {"max_retries": 0, "timeout": 5},
                                         "one": {"max_retries": 0, "timeout": 5},
                                         "two": {"max_retries": 0, "timeout": 5}}


# --- files that are not regular files ---------------------------------------------------------

def _not_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """(path, what the message says it is) of /dev/zero, a link to it and a FIFO."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "zero-link"
    link.symlink_to("/dev/zero")
    return {"/dev/zero": (Path("/dev/zero"), "a character device, not a regular file"),
            "a link to /dev/zero": (link, "a character device, not a regular file"),
            "a FIFO": (fifo, "a named pipe (FIFO), not a regular file")}


def _submission(tmp_path: Path, outputs: Path) -> Path:
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "manifest.yaml").write_text(
        f"id: sub\ntype: baseline\nfamily: Copy\nlicense: MIT\noutputs: {outputs}\n"
        "produced: {system: x, version: '1'}\n")
    return folder


SAMPLES = "samples_cultivar_deu_Latn_Germany_2026-01-01T00-00-00.jsonl"

# (what is read, code that reads PATH and prints the message; {tmp} is the test's folder)
READERS = {
    "--config": """
        from cultivar_assets.cli import main
        main(["--config", PATH, "run"])
        """,
    "models.yaml": """
        from cultivar_assets.models import load_models, ModelRegistryError
        try:
            load_models(PATH)
        except ModelRegistryError as error:
            print(error)
        """,
    "a submission's outputs": """
        from cultivar_assets.engines.submission import read_submission, SubmissionError
        from test_input_files import _submission
        from pathlib import Path
        try:
            read_submission(_submission(Path(TMP), Path(PATH)))
        except SubmissionError as error:
            print(error)
        """,
    "a submission's manifest": """
        from cultivar_assets.engines.submission import read_submission, SubmissionError
        try:
            read_submission(PATH)
        except SubmissionError as error:
            print(error)
        """,
    "an annotation file": """
        from cultivar_assets.construction.annotation.file import (
            load_annotation_document, AnnotationFileError)
        try:
            load_annotation_document(PATH)
        except AnnotationFileError as error:
            print(error)
        """,
    "an error-annotation file": """
        from cultivar_assets.error_analysis.file import read_error_file
        from cultivar_assets.site.tool_files import ToolFileError
        try:
            read_error_file(PATH, {})
        except ToolFileError as error:
            print(error)
        """,
    "lm-eval samples": """
        import os
        from pathlib import Path
        from cultivar_assets.engines.lm_eval_samples import read_lm_eval_samples
        from cultivar_assets.engines.submission import SubmissionError
        folder = Path(TMP) / "lm-eval" / "model"
        folder.mkdir(parents=True)
        os.symlink(PATH, folder / SAMPLES)
        try:
            read_lm_eval_samples(folder.parent)
        except SubmissionError as error:
            print(error)
        """,
    "recorded answers": """
        from cultivar_assets.engines.base import EngineLoadError, EngineSettings
        from cultivar_assets.engines.replay import ReplayEngine
        from cultivar_assets.specs import ModelSpec
        spec = ModelSpec(id="r", hf_id="org/r", type="LLM", family="R", engine="replay",
                         prompt_style="chat-instruction", engine_options={"answers": PATH})
        try:
            ReplayEngine(spec, EngineSettings()).info()
        except EngineLoadError as error:
            print(error)
        """,
    "a Cultivar data file": """
        import os
        from pathlib import Path
        from cultivar_assets.data.cultivar_files import find_locale_files, read_locale
        from cultivar_assets.data.testsets import DataError
        folder = Path(TMP) / "cultivar"
        folder.mkdir()
        os.symlink(PATH, folder / "deu_Latn_Germany.jsonl")
        try:
            read_locale("deu_Latn_Germany", find_locale_files(folder)["deu_Latn_Germany"])
        except DataError as error:
            print(error)
        """,
    "a FLORES file": """
        import os
        from pathlib import Path
        from cultivar_assets.data.flores import LocalFlores
        from cultivar_assets.data.testsets import DataError
        folder = Path(TMP) / "flores" / "dev"
        folder.mkdir(parents=True)
        os.symlink(PATH, folder / "deu_Latn.dev")
        try:
            LocalFlores(folder.parent).read(["deu_Latn"])
        except DataError as error:
            print(error)
        """,
    "a source benchmark table": """
        import os
        from pathlib import Path
        from cultivar_assets.data.source_benchmark import (
            SourceBenchmarkConfig, load_source_benchmark)
        from cultivar_assets.data.testsets import DataError
        table = Path(TMP) / "benchmark.tsv"
        os.symlink(PATH, table)
        try:
            load_source_benchmark(SourceBenchmarkConfig(kind="files", path=str(table)))
        except DataError as error:
            print(error)
        """,
}
# where a reader finds the file through a link of its own folder, the message names the link
LINKED = {"lm-eval samples": ("lm-eval", "model", SAMPLES),
          "a Cultivar data file": ("cultivar", "deu_Latn_Germany.jsonl"),
          "a FLORES file": ("flores", "dev", "deu_Latn.dev"),
          "a source benchmark table": ("benchmark.tsv",)}


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("kind", ["/dev/zero", "a link to /dev/zero", "a FIFO"])
def test_a_file_that_is_not_a_regular_file_is_refused_without_reading_it(reader, kind,
                                                                          tmp_path):
    path, said = _not_files(tmp_path)[kind]
    code = textwrap.dedent(READERS[reader]).replace("PATH", repr(str(path))).replace(
        "TMP", repr(str(tmp_path))).replace("SAMPLES", repr(SAMPLES))
    printed = run_child(f"import sys\nsys.path.insert(0, {str(ROOT / 'tests')!r})\n" + code,
                        tmp_path)
    if reader in LINKED:  # named by the link its folder holds
        path = tmp_path.joinpath(*LINKED[reader])
    # one line names the file and what it is (the tool files' readers head their list of
    # problems with a line of its own)
    assert any(str(path) in line and said in line for line in printed.splitlines()), printed


def test_read_input_file_checks_the_size_before_reading_and_reads_no_more(tmp_path):
    from cultivar_assets.config_files import ConfigFileError, read_input_file

    path = tmp_path / "big.yaml"
    path.write_bytes(b"x" * 1001)
    with pytest.raises(ConfigFileError) as info:
        read_input_file(path, "settings file", 1000)
    message = str(info.value)
    assert message.startswith(f"settings file {path} ") and "\n" not in message
    assert "1001 bytes" in message and "1000 bytes" in message
    assert read_input_file(path, "settings file", 1001) == b"x" * 1001
    named = re.escape(str(tmp_path))
    with pytest.raises(ConfigFileError, match=rf"^settings file {named} .*directory"):
        read_input_file(tmp_path, "settings file", 1000)


# --- folders read only for their own files ------------------------------------------------------

def test_lm_eval_samples_are_looked_for_only_where_lm_eval_writes_them(tmp_path):
    """``lm_eval --output_path DIR`` writes DIR/<model>/samples_*.jsonl: the folder and the
    folders directly inside it are listed, nothing deeper (``samples_dir=/`` walked the whole
    filesystem)."""
    from cultivar_assets.engines.lm_eval_samples import samples_files

    name = SAMPLES
    for folder in (tmp_path, tmp_path / "model", tmp_path / "model" / "deeper",
                   tmp_path / "other" / "a" / "b"):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("")
    assert samples_files(tmp_path) == [tmp_path / "model" / name, tmp_path / name]


def test_a_folders_digest_reads_no_fifo_or_device_and_the_error_folder_only_its_files(tmp_path):
    """The source assets' digests (``versions/inputs.py``) of a folder holding a FIFO and a link
    to /dev/zero finish, and change with its regular file; the error-annotation folder's digest
    changes with its ``*.errors.json`` only."""
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "a.txt").write_text("a")
    os.mkfifo(folder / "fifo")
    (folder / "zero-link").symlink_to("/dev/zero")
    errors = tmp_path / "errors"
    errors.mkdir()
    (errors / "t.errors.json").write_text("{}")
    (errors / "notes.txt").write_text("n")
    os.mkfifo(errors / "pipe")
    # the digests (one line), then again after each change (the child makes the changes)
    code = f"""
        from pathlib import Path
        from cultivar_assets.error_analysis.file import find_error_files
        from cultivar_assets.versions.inputs import content_digest, files_digest
        folder, errors = Path({str(folder)!r}), Path({str(errors)!r})
        def digests():
            print(content_digest(folder), files_digest(errors, find_error_files(errors)))
        digests()
        (errors / "notes.txt").write_text("other notes")
        digests()
        (folder / "a.txt").write_text("b")
        (errors / "t.errors.json").write_text("[]")
        digests()
    """
    digests, unchanged, changed = (line.split() for line in
                                   run_child(code, tmp_path).splitlines())
    assert len(digests) == 2 and unchanged == digests
    assert changed[0] != digests[0] and changed[1] != digests[1]
    assert (folder / "a.txt").read_text() == "b"  # the child's changes were made
