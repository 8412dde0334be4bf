"""A full disk says "out of disk space", names the file or folder, the space left (and what was
needed, when known) and that nothing was lost -- for every write path: the DuckDB database
(``Store.write``: the first error, not the rollback's), the translation and localisation caches
(SQLite), output folders and kept file copies, and Dagster's own storage (through the CLI). The
disk is a real one that fills up: a small tmpfs (tests/disk_helpers.py; skipped where mounting is
not permitted), except for the folder test that injects ENOSPC where a file is written."""

from __future__ import annotations

import errno
import os
import re
import sys
from pathlib import Path

import duckdb
import pytest
from disk_helpers import fill, small_disk
from test_store_database import raw_tables

from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.files import DiskFullError, keep_file_copy, read_manifest, replace_folder
from cultivar_assets.store.database import Store, WriteBlock
from cultivar_assets.store.records import write_dataset


def _one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text, text
    return text


def test_a_database_write_on_a_full_disk_keeps_its_first_error_and_the_old_rows(tmp_path):
    with small_disk(tmp_path / "disk", 12) as disk:
        store = Store(disk / "results.duckdb")
        write_dataset(store, load_benchmark(DataConfig()))
        before = raw_tables(store.path)
        filler = fill(disk)
        rows = [{"test_set": f"t{i}", "kind": "flores", "language": "deu_Latn", "locale": None,
                 "segment_id": i, "source": "s" * 2000, "reference": "r" * 2000}
                for i in range(3000)]
        with pytest.raises(DiskFullError) as info:
            store.write([WriteBlock("insert_segments", rows=rows)])
        message = _one_line(info.value)
        assert message.startswith(f"out of disk space writing {store.path}")
        assert re.search(r"\d [kMG]B free\b", message)
        # wording is the interface: docs/writers-and-disk-full.md (what is kept)
        assert "Nothing was lost" in message
        assert "cannot rollback" not in message  # the rollback's error is not the one shown
        assert "No space left on device" in str(info.value.__cause__)  # DuckDB's own first error
        filler.unlink()  # space again: the database is as it was, and writable
        assert raw_tables(store.path) == before
        store.write([])  # a write of nothing (the log only)
        del store


def test_the_translation_cache_on_a_full_disk_keeps_what_it_held(tmp_path):
    from cultivar_assets.translation import TranslationCache

    with small_disk(tmp_path / "disk", 4) as disk:
        cache = TranslationCache(disk / "model.sqlite")
        cache.put_many([("k0", "first output")])
        filler = fill(disk)
        batch = [(f"k{i}", "x" * 4000) for i in range(1, 200)]
        with pytest.raises(DiskFullError) as info:
            cache.put_many(batch)
        message = _one_line(info.value)
        assert message.startswith(f"out of disk space writing {disk / 'model.sqlite'}")
        needed = sum(len(k) + len(v) for k, v in batch)  # the batch's keys and outputs (ASCII)
        assert f"{needed / 1e3:.1f} kB" in message
        # wording is the interface: docs/writers-and-disk-full.md (what is kept)
        assert "the translation cache keeps every output it held before" in message
        assert "delete" not in message
        cache.close()
        filler.unlink()
        cache = TranslationCache(disk / "model.sqlite")
        assert cache.get_many([f"k{i}" for i in range(200)]) == {"k0": "first output"}
        cache.close()


def test_the_localisation_cache_on_a_full_disk_says_so_and_never_advises_deleting_it(tmp_path):
    from cultivar_assets.construction.config import demo_construction
    from cultivar_assets.construction.localisation.localiser import cache_info, make_localiser

    localiser = make_localiser(demo_construction().localisation)
    with small_disk(tmp_path / "disk", 1) as disk:
        fill(disk)
        with pytest.raises(DiskFullError) as info:
            cache_info(localiser, disk)  # opens (creates) the localiser's cache
    message = _one_line(info.value)
    assert message.startswith(f"out of disk space writing {disk / localiser.spec.id}.sqlite")
    # wording is the interface: docs/writers-and-disk-full.md (what is kept)
    assert "the localisation cache was not opened" in message
    assert "translation cache" not in message and "delete" not in message


def test_an_output_folder_on_a_full_disk_keeps_the_previous_build(tmp_path):
    with small_disk(tmp_path / "disk", 2) as disk:
        target = disk / "site"
        replace_folder(target, lambda work: (work / "index.html").write_text("old build"))

        def big(work: Path) -> None:
            (work / "index.html").write_text("new build")
            (work / "data.bin").write_bytes(b"\0" * 3_000_000)  # more than the disk holds

        with pytest.raises(DiskFullError) as info:
            replace_folder(target, big)
        message = _one_line(info.value)
        assert message.startswith(f"out of disk space writing {target} (")
        assert re.search(r"\d kB free\b", message)
        # wording is the interface: docs/writers-and-disk-full.md (what is kept)
        assert f"the previous {target} (" in message
        assert "is unchanged, and the partial build was removed" in message
        assert (target / "index.html").read_text() == "old build"
        assert sorted(p.name for p in disk.iterdir()) == ["site"]  # no partial build left

        source = tmp_path / "model.duckdb"
        source.write_bytes(os.urandom(3_000_000))
        with pytest.raises(DiskFullError, match=r"\b3\.0 MB\b.*was not created"):
            keep_file_copy(source, disk / "downloads", "cultivar.duckdb")
        assert list((disk / "downloads").iterdir()) == []


def test_a_full_disk_in_any_file_of_a_folder_build_is_reported_with_the_file(tmp_path):
    """Without mounting: the folder's writer gets ENOSPC from the operating system."""
    target = tmp_path / "charts"
    replace_folder(target, lambda work: (work / "a.svg").write_text("old"), {"kind": "charts"})

    def failing(work: Path) -> None:
        (work / "b.svg").write_text("half")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(work / "b.svg"))

    with pytest.raises(DiskFullError) as info:
        replace_folder(target, failing)
    # wording is the interface: docs/writers-and-disk-full.md (what is kept)
    assert "b.svg" in str(info.value) and "Nothing was lost" in str(info.value)
    assert read_manifest(target) == {"kind": "charts"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["charts"]


@pytest.mark.dagster_instances
def test_dagsters_storage_on_a_full_disk_is_one_line_from_the_cli(tmp_path, monkeypatch):
    import dagster as dg

    from cultivar_assets import cli

    @dg.asset
    def anything() -> int:
        return 1

    with small_disk(tmp_path / "disk", 4) as disk:
        home = disk / "dagster"
        home.mkdir()
        monkeypatch.setenv("DAGSTER_HOME", str(home))
        with dg.DagsterInstance.from_config(str(home)) as instance:
            dg.materialize([anything], instance=instance)
            fill(disk)
            with pytest.raises(Exception) as info:  # whatever Dagster raises
                dg.materialize([anything], instance=instance, raise_on_error=False)
        assert "disk I/O error" in str(info.value) or "disk is full" in str(info.value)
        message = cli._disk_full_message(info.value)
    assert message is not None and "\n" not in message
    assert message.startswith(f"out of disk space writing {home}")
    # wording is the interface: docs/writers-and-disk-full.md (what is kept)
    assert "Dagster's run and event storage there keeps every run and event" in message


@pytest.mark.dagster_instances
def test_dagsters_own_dumps_of_a_full_disk_are_kept_off_stderr(tmp_path, monkeypatch, capsys):
    """Dagster writes "Exception while writing logger call to event log: ..." with the SQL and
    the event's payload (4 lines per event) to stderr itself, before the CLI's one line."""
    import dagster as dg

    from cultivar_assets import cli

    with small_disk(tmp_path / "disk", 4) as disk:
        home = disk / "dagster"
        home.mkdir()
        monkeypatch.setenv("DAGSTER_HOME", str(home))

        @dg.asset
        def logs(context) -> int:
            fill(disk)
            context.log.info("a user log message")
            return 1

        with dg.DagsterInstance.from_config(str(home)) as instance:
            capsys.readouterr()
            with (pytest.raises(Exception) as info,  # whatever Dagster raises
                  cli.dagster_storage_errors("cultivar run") as errors):
                print("other text", file=sys.stderr)
                dg.materialize([logs], instance=instance, raise_on_error=False)
        message = cli._disk_full_message(info.value)
    err = capsys.readouterr().err
    assert errors.dropped >= 1
    assert "Exception while writing logger call" not in err and "[SQL:" not in err
    assert "other text\n" in err and "Dagster could not store" not in err  # it failed: no note
    assert message.startswith(f"out of disk space writing {home}") and "\n" not in message


def test_log_messages_dagster_could_not_store_are_one_note_when_the_command_ends_well(
        tmp_path, capsys):
    from cultivar_assets import cli

    text = ("Exception while writing logger call to event log: (sqlite3.OperationalError) "
            "database or disk is full\n[SQL: INSERT INTO event_logs ...]\n"
            "[parameters: ('run', '{\"message\": \"secret payload\"}')]\n(Background ...)\n")
    with cli.dagster_storage_errors("cultivar run") as errors:
        sys.stderr.write(text)
        sys.stderr.write(text)
    err = capsys.readouterr().err
    assert errors.dropped == 2 and "payload" not in err
    assert err.startswith("cultivar run: note: ") and err.count("\n") == 1
    assert re.search(r"\b2 log message\(s\)", err) and "Dagster" in err


def test_other_errors_are_not_called_a_full_disk(tmp_path):
    from cultivar_assets import cli

    assert cli._disk_full_message(duckdb.CatalogException("Table x does not exist")) is None
    assert cli._disk_full_message(OSError(errno.EACCES, "Permission denied")) is None


def test_any_other_full_disk_is_named_as_such_not_as_dagsters(tmp_path):
    from cultivar_assets import cli

    error = RuntimeError("materialising site failed")
    error.__cause__ = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "x.js"))
    message = cli._disk_full_message(error)
    assert message.startswith(f"out of disk space writing {tmp_path / 'x.js'} (")
    # wording is the interface: docs/writers-and-disk-full.md (what is kept)
    assert "Dagster" not in message and "Nothing already stored was lost" in message


def test_a_full_disk_naming_no_file_states_no_other_disks_free_space(tmp_path, monkeypatch):
    """The free space stated was the current directory's, another disk than the one written."""
    from cultivar_assets import cli

    monkeypatch.chdir(tmp_path)
    message = cli._disk_full_message(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
    assert message.startswith("out of disk space: ") and "free" not in message


def test_the_vega_bundle_on_a_full_disk_is_named_and_leaves_no_partial_file(tmp_path,
                                                                             monkeypatch):
    import subprocess

    import vl_convert

    from cultivar_assets import cli
    from cultivar_assets.site.build import vega_bundle

    bundle = "/* vega */" * 300_000  # 3 MB, more than the disk holds
    monkeypatch.setattr(vl_convert, "javascript_bundle", lambda: bundle)
    with small_disk(tmp_path / "disk", 1) as disk:
        cache = disk / "web"
        with pytest.raises(DiskFullError) as info:
            vega_bundle(cache)
        [folder] = cache.iterdir()
        message = _one_line(info.value)
        assert message.startswith(f"out of disk space writing {folder / 'vega-bundle.js'} (")
        assert re.search(r"\d kB free\b", message) and "3.0 MB" in message
        assert cli._disk_full_message(RuntimeError("site")) is None
        assert cli._disk_full_message(info.value) == message
        assert list(folder.iterdir()) == []  # no partial file left
        # a partial file of a build that was killed is removed by the next good one
        dead = subprocess.Popen(["true"])
        dead.wait()
        (folder / f"vega-bundle.{dead.pid}.partial").write_text("half")
        monkeypatch.setattr(vl_convert, "javascript_bundle", lambda: "/* vega */")
        assert vega_bundle(cache).read_text("utf-8") == "/* vega */"
        assert [p.name for p in folder.iterdir()] == ["vega-bundle.js"]
