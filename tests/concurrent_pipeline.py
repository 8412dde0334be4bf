"""One real pipeline run (``run_pipeline``: Dagster in process) in its own process, for the
concurrent-run tests (tests/test_concurrent_runs.py).

``python concurrent_pipeline.py SETTINGS_JSON [PAUSE_DIR [WHERE]]``: run the pipeline with the
settings (``Settings`` as JSON), print every line it says, then ``leaderboard: <model (family);
…>``, ``fresh: <stages>`` and ``finished``; on an error, print ``error: <message>`` and exit 1.
With PAUSE_DIR, the run pauses right after it has written a model's translations file (WHERE
``translations``, the default) or right after its model's run (job ``evaluate_model``) has
succeeded (WHERE ``model-run``): it creates ``PAUSE_DIR/paused`` and waits (at most 300 s) until
``PAUSE_DIR/release`` exists.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def _pause(folder: Path) -> None:
    (folder / "paused").touch()
    deadline = time.monotonic() + 300
    while not (folder / "release").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def pause_after_translations(folder: Path) -> None:
    from cultivar_assets.assets import model_assets

    original = model_assets.write_translations_file

    def write_then_pause(*args, **kwargs):
        digest = original(*args, **kwargs)
        _pause(folder)
        return digest

    model_assets.write_translations_file = write_then_pause


def pause_after_model_run(folder: Path) -> None:
    from cultivar_assets.runner.pipeline import _Materialiser

    original = _Materialiser._execute

    def execute_then_pause(self, job_name, *args, **kwargs):
        result = original(self, job_name, *args, **kwargs)
        if job_name == "evaluate_model":
            _pause(folder)
        return result

    _Materialiser._execute = execute_then_pause


def main(settings_json: str, pause: str | None, where: str = "translations") -> int:
    from cultivar_assets.runner import run_pipeline
    from cultivar_assets.settings import Settings

    settings = Settings.model_validate_json(settings_json)
    if pause:
        {"translations": pause_after_translations,
         "model-run": pause_after_model_run}[where](Path(pause))
    try:
        result = run_pipeline(settings, say=lambda line: print(line, flush=True))
    except Exception as error:  # the message the CLI would print
        print(f"error: {error}", flush=True)
        return 1
    print("leaderboard: " + "; ".join(f"{row['model_id']} ({row['family']})"
                                      for row in result.leaderboard))
    print(f"fresh: {result.fresh}")
    print("finished", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]) if len(sys.argv) > 2 else main(sys.argv[1], None))
