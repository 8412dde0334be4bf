"""What the command line says: every option and argument has help text, the top
level shows no reStructuredText, `demo` takes no settings file, the demo names a folder of the
user's own for handed-in files, `models add` for a baseline without weights, counts and model
selections in words, parameter counts below 0.01 B."""

from __future__ import annotations

import argparse

import pytest

from cultivar_assets.cli import build_parser, main
from cultivar_assets.cli.build import _hand_in_line
from cultivar_assets.construction.config import demo_annotations_dir
from cultivar_assets.models import load_models
from cultivar_assets.paths import cultivar_home
from cultivar_assets.settings import demo_settings
from cultivar_assets.tables import format_value


def _parsers(parser: argparse.ArgumentParser, path: str = "cultivar"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _parsers(child, f"{path} {name}")


def test_every_option_and_argument_has_help_text():
    missing = [f"{path}: {action.option_strings or action.dest}"
               for path, parser in _parsers(build_parser()) for action in parser._actions
               if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
               and not action.help]
    assert missing == []


def test_the_top_level_help_shows_no_restructuredtext():
    text = build_parser().format_help()
    assert "``" not in text and "`" not in text
    assert "The cultivar command line" in text  # wording is the interface: the help text


def test_demo_lists_no_settings_file_option_and_refuses_one(capsys):
    demo = dict(_parsers(build_parser()))["cultivar demo"]
    assert "settings files are not read" in build_parser().format_help()
    assert "--config" not in demo.format_help()
    with pytest.raises(SystemExit):  # argparse: unrecognized arguments
        main(["demo", "--config", "mine.yaml"])
    capsys.readouterr()
    assert main(["--config", "mine.yaml", "demo"]) == 2  # before anything runs
    err = capsys.readouterr().err
    assert "cultivar run --config mine.yaml" in err  # the command that reads the file given


def test_the_demos_hand_in_line_names_a_folder_in_the_users_home():
    line = _hand_in_line(demo_settings())
    assert str(cultivar_home() / "construction" / "annotations") in line
    assert str(demo_annotations_dir()) not in line and "cultivar_assets" not in line


def test_a_model_selection_in_words():
    from cultivar_assets.cli.pipeline_run import selection_text

    # wording is the interface: selection_text defines the words `cultivar run` prints
    assert selection_text(["suite:demo"]) == "the models of suite demo"
    assert selection_text(["shouty-reference-v1"]) == "shouty-reference-v1"
    # wording is the interface: selection_text defines the words `cultivar run` prints
    assert selection_text(["suite:demo", "m-1", "m-2"]) == "the models of suite demo, m-1 and m-2"


def test_models_add_takes_a_copy_baseline_without_weights(tmp_path, capsys):
    path = tmp_path / "models.yaml"
    path.write_text("models: []\n")
    args = ["models", "add", "--type", "baseline", "--engine", "copy-source",
            "--family", "Baseline", "--file", str(path)]
    assert main(args) == 1  # neither a repository nor an id
    err = capsys.readouterr().err
    assert "hf_id" in err and "--id" in err
    assert path.read_text() == "models: []\n"
    assert main([*args, "--id", "copy-2", "--revision", "abc"]) == 1
    err = capsys.readouterr().err
    assert "--revision 'abc'" in err and "hf_id" in err
    assert main([*args, "--id", "copy-2"]) == 0
    said = capsys.readouterr().out
    assert "copy-2" in said and "revision" not in said
    spec = load_models(path).get("copy-2")
    assert spec.hf_id is None and spec.engine == "copy-source"


def test_the_registry_count_is_in_words(tmp_path, capsys):
    registry = tmp_path / "models.yaml"
    registry.write_text("models:\n  - {id: x0, type: baseline, family: B, engine: copy-source, "
                        "prompt_style: source}\n")
    config = tmp_path / "cultivar.yaml"
    config.write_text(f"models_file: {registry}\n")
    assert main(["--config", str(config), "models"]) == 0
    # wording is the interface: a count in words (tables.count), this test's subject
    assert "1 model, registry valid" in capsys.readouterr().err
    from cultivar_assets.tables import count

    assert count(1, "model") == "1 model" and count(3, "model") == "3 models"


@pytest.mark.parametrize(("value", "text"), [(0.001, "0.001"), (0.0012, "0.0012"),
                                             (0.27, "0.27"), (1.7, "1.70"), (0.0, "0.00"),
                                             (None, "–")])
def test_parameter_counts_keep_their_first_digits(value, text):
    from cultivar_assets.tables import format_params

    assert format_params(value) == text
    assert format_value(value, "params_total_b") == text


def test_notes_from_inputs_are_printed_escaped_and_never_as_markup(capsys):
    """A data note naming a file whose name holds an escape sequence, a bidi override
    or rich markup is printed as text: the escapes escaped, the markup as written."""
    from cultivar_assets.cli.pipeline_run import _print_missing

    _print_missing([{"note": "file \x1b[31mred\u202eevil[bold]x[/bold].jsonl names no locale"}],
                   [{"test_set": "cultivar_x", "reason": "\x1b]0;title\x07"}])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert "\\x1b[31mred\\u202eevil[bold]x[/bold].jsonl" in out
    assert "\\x1b]0;title\\x07" in out
