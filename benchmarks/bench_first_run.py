"""Benchmark: the first ``cultivar demo`` from a fresh clone, as the README's first command runs it.

    python benchmarks/bench_first_run.py                 # this checkout's Python, fresh clone
    python benchmarks/bench_first_run.py --fresh-venv    # also time the README's pip install

What it does, in a temporary folder (``--work`` to keep it):

1. ``git clone`` of ``--source`` (default: this repository; its *committed* HEAD, so commit first);
2. with ``--fresh-venv``: the README's install (:data:`README_INSTALL`, or ``--install``), timed;
   otherwise the clone runs with ``--python`` (default: the Python running this script) and
   ``PYTHONPATH`` at the clone, which must have the project's dependencies installed;
3. ``cultivar demo`` in the clone, ``--runs`` times (default 2: the first run and the second,
   cached one), with no ``CULTIVAR_HOME``, ``DAGSTER_HOME`` or ``CULTIVAR_CONFIG`` in the
   environment, so everything lands in the clone's fresh ``.cultivar`` as it would for a new user.

Every line (and every progress-bar refresh) of the demo's output is timestamped; the phases are
cut at the demo's own step lines (``[k/n] <step>``, six for the demo, which builds its data
before it evaluates it, and ``model k/n: <id>`` within the models' step;
``tests/test_bench_first_run.py`` feeds it the lines a first demo prints). Within a model's
step, *translation* is the elapsed time its ``translate <model>`` progress bar reports at its
end (Dagster captures a step's output and passes it on in bursts, so the time a fragment arrives
says little), and *load and the rest* is the remainder of the step (the model's conversion on a
first run, loading it, cleaning, the database, scores, Dagster). Peak RSS is the
child's ``ru_maxrss``. The machine is shared: the table records the 1-minute load average
before and after each timed command. Not a test; run it by hand and copy the table into
docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
STEP = re.compile(r"^\[(\d+)/(\d+)\] (.*)")
MODEL_STEP = re.compile(r"^model (\d+)/(\d+): (\S+)")
BAR = re.compile(r"^translate (\S+):.*\[(?:(\d+):)?(\d+):(\d+)<")  # tqdm: [h:mm:ss< or [mm:ss<
CLEARED = ("CULTIVAR_HOME", "DAGSTER_HOME", "CULTIVAR_CONFIG")
# the README's first command, up to `&& .venv/bin/cultivar demo` (which is timed on its own)
README_INSTALL = ('python3 -m venv .venv && .venv/bin/pip install -q -U pip && '
                  '.venv/bin/pip install -q torch==2.13.0 -e ".[cpu]"')


@dataclass
class Timed:
    """One command: its wall time, peak RSS, load average and timestamped output fragments."""

    label: str
    seconds: float
    peak_rss_mb: float
    load: tuple[float, float]
    returncode: int
    lines: list[tuple[float, str]] = field(default_factory=list)


def run_timed(label: str, command: list[str], cwd: Path, env: dict[str, str],
              echo: bool) -> Timed:
    """Run ``command``, timestamping each output fragment (split at newlines and carriage
    returns, so progress-bar refreshes count)."""
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
    lines: list[tuple[float, str]] = []
    pending = b""
    assert process.stdout is not None
    while chunk := process.stdout.read1(65536):
        now = time.perf_counter() - started
        if echo:
            sys.stdout.buffer.write(chunk)
            sys.stdout.flush()
        pending += chunk
        *complete, pending = re.split(rb"[\r\n]", pending)
        lines += [(now, part.decode("utf-8", "replace").strip()) for part in complete if part]
    if pending:
        lines.append((time.perf_counter() - started, pending.decode("utf-8", "replace").strip()))
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    return Timed(label, seconds, usage.ru_maxrss / 1024, (load_before, os.getloadavg()[0]),
                 process.returncode, lines)


def step_name(title: str) -> str:
    """A step line's title up to its first detail (`` (``, `` ->``, ``: ``), at most 48
    characters."""
    for cut in (" (", " ->", ": "):
        title = title.split(cut, 1)[0]
    return title[:48]


def demo_phases(run: Timed) -> list[tuple[str, float]]:
    """The phases of one ``cultivar demo`` run (see the module docstring)."""
    marks: list[tuple[float, str, str | None]] = []  # (time, phase name, model id)
    bars: dict[str, float] = {}  # model -> the bar's last reported elapsed seconds
    for when, text in run.lines:
        if match := MODEL_STEP.match(text):
            marks.append((when, f"model {match[1]}/{match[2]}", match[3]))
        elif match := STEP.match(text):
            marks.append((when, f"[{match[1]}/{match[2]}] {step_name(match[3])}", None))
        elif match := BAR.match(text):
            hours, minutes, seconds = (int(g) if g else 0 for g in match.groups()[1:])
            bars[match[1]] = 3600 * hours + 60 * minutes + seconds
    if not marks:
        return []
    phases = [("start-up (imports, Dagster instance)", marks[0][0])]
    ends = [m[0] for m in marks[1:]] + [run.seconds]
    for (start, name, model), end in zip(marks, ends, strict=True):
        if model is None:
            phases.append((name, end - start))
            continue
        if model not in bars:  # nothing to generate: every translation came from the cache
            phases.append((f"{model} (no generation)", end - start))
            continue
        phases += [(f"{model}: translation (progress bar's elapsed)", bars[model]),
                   (f"{model}: load (conversion on a first run) and the rest",
                    end - start - bars[model])]
    return phases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default=str(REPO_ROOT), help="repository to clone")
    parser.add_argument("--fresh-venv", action="store_true",
                        help="create .venv in the clone with the README's pip command (timed)")
    parser.add_argument("--install", default=README_INSTALL,
                        help="with --fresh-venv: the install command (bash, in the clone)")
    parser.add_argument("--python", default=sys.executable,
                        help="without --fresh-venv: the Python that runs the demo")
    parser.add_argument("--runs", type=int, default=2, help="demo runs (first, second, ...)")
    parser.add_argument("--work", help="folder for the clone (kept); default: temporary, removed")
    parser.add_argument("--echo", action="store_true", help="show the commands' output")
    parser.add_argument("--log", help="write every timestamped output fragment to this file")
    args = parser.parse_args(argv)

    dirty = subprocess.run(["git", "-C", args.source, "status", "--porcelain",
                            "--untracked-files=no"], capture_output=True, text=True).stdout
    if dirty.strip():
        print(f"note: {args.source} has uncommitted changes; the clone has its HEAD only",
              file=sys.stderr)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="cultivar-first-run-"))
    clone = work / "clone"
    if clone.exists():
        shutil.rmtree(clone)
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", args.source, str(clone)],
                   check=True)
    head = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env["PYTHONUNBUFFERED"] = "1"
    timed: list[Timed] = []
    try:
        if args.fresh_venv:
            install = run_timed("install (pip, fresh .venv)", ["bash", "-c", args.install],
                                clone, env, args.echo)
            timed.append(install)
            if install.returncode:
                print("\n".join(t for _, t in install.lines[-30:]), file=sys.stderr)
                return 1
            demo = [str(clone / ".venv" / "bin" / "cultivar"), "demo"]
        else:
            env["PYTHONPATH"] = str(clone)
            demo = [args.python, "-c", "import sys; from cultivar_assets.cli import main; "
                    "sys.exit(main(['demo']))"]
        for number in range(1, args.runs + 1):
            run = run_timed(f"cultivar demo, run {number}", demo, clone, env, args.echo)
            timed.append(run)
            if run.returncode:
                print("\n".join(t for _, t in run.lines[-30:]), file=sys.stderr)
                return 1
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)

    how = f"fresh .venv: {args.install}" if args.fresh_venv else f"python {args.python}"
    print(f"\nmachine: {platform.machine()}, {os.cpu_count()} CPUs; clone of {args.source} "
          f"at {head}; {how}\n")
    print("| step | seconds | peak RSS (MB) | load before–after |")
    print("|---|---|---|---|")
    for run in timed:
        print(f"| {run.label} | {run.seconds:.1f} | {run.peak_rss_mb:.0f} | "
              f"{run.load[0]:.1f}–{run.load[1]:.1f} |")
        if run.label.startswith("cultivar demo"):
            for name, seconds in demo_phases(run):
                print(f"| &nbsp;&nbsp;{name} | {seconds:.1f} | | |")
    if args.log:
        with open(args.log, "w", encoding="utf-8") as log:
            for run in timed:
                log.writelines(f"{run.label}\t{when:.2f}\t{text}\n" for when, text in run.lines)
    if args.fresh_venv and len(timed) > 1:
        print(f"| **install + first demo** | {timed[0].seconds + timed[1].seconds:.1f} | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
