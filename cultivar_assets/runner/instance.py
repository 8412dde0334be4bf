"""The local Dagster instance that ``cultivar``'s commands share, and the lock that makes runs
of the same settings take turns.

- ``$DAGSTER_HOME``, else ``$CULTIVAR_HOME/dagster`` (:func:`dagster_home_dir`), holds the
  instance. :func:`local_instance` opens it under an exclusive file lock
  (``.cultivar-instance.lock`` in that folder): one process at a time creates or checks its
  storage. The instance counts as set up when the file ``.cultivar-instance-ready`` holds the
  installed Dagster version; that file is written only after Dagster's own migration
  (``DagsterInstance.upgrade``, what ``dagster instance migrate`` runs) has completed on the
  storage. An instance without it (new, left half set up by a killed process, or set up by
  another Dagster version) is migrated under the lock before it is used, so a set-up that was
  interrupted is completed by the next start.
- :func:`settings_turn`: a pipeline run holds ``<database folder>/.<database name>.runs/
  <settings digest>.lock`` for its whole run; a second run of the same settings on the same
  database says ``waiting for the run started at … (pid N) …`` and starts when the first has
  ended. Runs of different settings do not wait for each other.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from cultivar_assets.paths import dagster_home

if TYPE_CHECKING:
    import dagster as dg

    from cultivar_assets.settings import Settings

INSTANCE_LOCK = ".cultivar-instance.lock"
INSTANCE_READY = ".cultivar-instance-ready"


def dagster_home_dir() -> str:
    """``$DAGSTER_HOME``, else ``$CULTIVAR_HOME/dagster``, created with a ``dagster.yaml`` (no
    telemetry; concurrency pools limited to one run of their assets at a time)."""
    home = os.environ.get("DAGSTER_HOME") or str(dagster_home())
    os.makedirs(home, exist_ok=True)
    config = os.path.join(home, "dagster.yaml")
    if not os.path.exists(config):
        text = ("# Local Dagster instance of the Cultivar toolkit (created by cultivar).\n"
                "telemetry:\n  enabled: false\n"
                "# the pool cultivar_database (model_results, the one writer of the models'\n"
                "# rows into the database): one at a time\n"
                "concurrency:\n  pools:\n    default_limit: 1\n")
        partial = f"{config}.{os.getpid()}.tmp"
        with open(partial, "w") as handle:
            handle.write(text)
        os.replace(partial, config)  # whole or absent, whoever writes it
    return home


def _ready_text() -> str:
    import dagster as dg

    return f"dagster {dg.__version__}\n"


def set_up_instance(home: str) -> bool:
    """Make the instance in ``home`` ready (module docstring), under its lock; True when it had
    to be set up or repaired. A migration that fails raises RuntimeError with Dagster's message
    and what it printed, and leaves the instance marked as not ready."""
    import dagster as dg
    from filelock import FileLock

    ready = Path(home) / INSTANCE_READY
    with FileLock(str(Path(home) / INSTANCE_LOCK)):
        if ready.is_file() and ready.read_text() == _ready_text():
            return False
        ready.unlink(missing_ok=True)
        said = io.StringIO()
        try:
            with (contextlib.redirect_stdout(said), contextlib.redirect_stderr(said),
                  dg.DagsterInstance.from_config(home) as instance):
                instance.upgrade(print_fn=lambda *parts: said.write(" ".join(map(str, parts))))
        except Exception as error:
            tail = " ".join(said.getvalue().split())[-500:]
            raise RuntimeError(
                f"setting up the Dagster instance in {home} failed: {error}"
                + (f" (Dagster said: {tail})" if tail else "")) from error
        partial = ready.with_name(f"{INSTANCE_READY}.{os.getpid()}.tmp")
        partial.write_text(_ready_text())
        os.replace(partial, ready)
        return True


@contextlib.contextmanager
def local_instance(home: str | None = None) -> Iterator[dg.DagsterInstance]:
    """The Dagster instance in ``home`` (default: :func:`dagster_home_dir`), set up or repaired
    first (:func:`set_up_instance`)."""
    import dagster as dg

    home = home or dagster_home_dir()
    set_up_instance(home)
    with dg.DagsterInstance.from_config(home) as instance:
        yield instance


def settings_digest(settings: Settings) -> str:
    """The digest of ``settings`` as JSON (every field, sorted keys): runs with equal digests
    are runs of the same settings."""
    blob = json.dumps(settings.model_dump(mode="json"), sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def turn_lock_path(settings: Settings) -> Path:
    """The lock file that runs of ``settings`` take turns on (module docstring)."""
    database = Path(settings.database_path)
    return database.parent / f".{database.name}.runs" / f"{settings_digest(settings)[:24]}.lock"


@contextlib.contextmanager
def settings_turn(settings: Settings, say: Callable[[str], None]) -> Iterator[None]:
    """Hold the turn of ``settings`` (module docstring); when another process holds it, say
    whose run is waited for, then wait."""
    from filelock import FileLock, Timeout

    path = turn_lock_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    holder = path.with_suffix(".holder")
    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        try:
            who = json.loads(holder.read_text())
            whose = f"the run started at {who['started']} (pid {who['pid']})"
        except (OSError, ValueError, KeyError):  # it is being written or was never written
            whose = "a run"
        say(f"waiting for {whose} with the same settings on {settings.database_path} to end "
            f"(lock {path})")
        lock.acquire()
    try:
        partial = holder.with_name(f"{holder.name}.{os.getpid()}.tmp")
        partial.write_text(json.dumps({
            "pid": os.getpid(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}))
        os.replace(partial, holder)
        yield
    finally:
        holder.unlink(missing_ok=True)
        lock.release()
