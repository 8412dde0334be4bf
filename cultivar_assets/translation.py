"""Translating a model's test sets: prompts, the on-disk cache, the engine and cleaning.

One call loads the model at most once and translates every segment of every test set it is
given. Outputs are cached on disk (SQLite, one file per model) under a key that hashes the
model's fingerprint (weights, revision, engine, engine options, prompt template), the run-wide
settings the engine's outputs depend on (dtype, device) and the full request (rendered prompt,
stop strings, max tokens, source): a batch is committed as soon as it
is generated, so a killed run loses at most the batch in flight and a finished run re-generates
nothing. The model is not even loaded when every segment is cached.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from tqdm import tqdm

from cultivar_assets.data.testsets import TestSet
from cultivar_assets.engines import engine_registry
from cultivar_assets.engines.base import EngineInfo, EngineSettings
from cultivar_assets.engines.cleaning import clean_output
from cultivar_assets.engines.fingerprint import run_fingerprint
from cultivar_assets.engines.prompts import GenerationRequest, get_prompt_style
from cultivar_assets.files import disk_full_error, is_disk_full
from cultivar_assets.paths import translation_cache_dir
from cultivar_assets.secrets import redact
from cultivar_assets.specs import ModelSpec
from cultivar_assets.sqlfiles import statement_text

LOG = logging.getLogger(__name__)
ProgressCallback = Callable[[int, int], None]  # (segments done, segments in total)


class SegmentFailuresError(RuntimeError):
    """Some segments got no output (after the engine's own retries); nothing empty was stored.

    Every successful output is cached, so running again retries only the failed segments.
    """

    def __init__(self, model_id: str, failures: list[tuple[str, int, str]]) -> None:
        self.failures = failures  # (test set, segment id, reason)
        listing = "; ".join(f"{t}:{i} ({why})" for t, i, why in failures[:5])
        more = f" and {len(failures) - 5} more" if len(failures) > 5 else ""
        super().__init__(f"{model_id}: {len(failures)} segment(s) failed: {listing}{more}. "
                         "The others are cached; run again to retry only these.")


@dataclass(frozen=True)
class TranslationRow:
    model_id: str
    test_set: str
    segment_id: int
    source: str
    reference: str
    hypothesis: str
    raw_output: str
    cleaning_rules: tuple[str, ...]


@dataclass(frozen=True)
class TranslationRun:
    model: ModelSpec
    fingerprint: str  # run_fingerprint(model, settings): what the outputs depend on
    info: EngineInfo
    prompt_template_hash: str
    rows: list[TranslationRow]
    n_generated: int
    n_cached: int
    seconds: float

    @property
    def translations_fingerprint(self) -> str:
        """sha256 of every row's test set, segment id, hypothesis, raw output and cleaning rules:
        scores computed from these translations carry it, so that scores of other translations
        are recognised as stale."""
        payload = [[r.test_set, r.segment_id, r.hypothesis, r.raw_output, list(r.cleaning_rules)]
                   for r in sorted(self.rows, key=lambda r: (r.test_set, r.segment_id))]
        blob = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class TranslationCacheError(RuntimeError):
    """The translation cache file cannot be used (damaged, not SQLite, not readable)."""


class TranslationCache:
    """Raw outputs by request key, in ``<cache_dir>/<model id>.sqlite``. ``kind`` names the
    cache in messages ("translation cache", "localisation cache", whose model outputs it holds).

    On a full disk, opening it or storing a batch raises
    :class:`~cultivar_assets.files.DiskFullError` naming the file: each batch is one
    transaction, so the cache keeps every output it held before, and the batch that could not
    be stored is generated again by the next run."""

    def __init__(self, path: Path, kind: str = "translation cache") -> None:
        self.path, self.kind = path, kind
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, timeout=60)
            self._db.executescript(statement_text("cache_schema"))
        except (sqlite3.DatabaseError, OSError) as error:
            if is_disk_full(error, path):
                raise disk_full_error(path, f"the {kind} was not opened and holds what it held "
                                      "before", error) from error
            if isinstance(error, OSError):
                raise
            raise TranslationCacheError(
                f"the {kind} {path} cannot be used ({error}). It holds only cached model "
                "outputs: move it away or delete it, and the next run generates them again"
            ) from error

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        query = statement_text("cache_get_outputs")
        return dict(self._db.execute(query, (json.dumps(list(keys)),)).fetchall())

    @contextmanager
    def _storing(self, what: str, n_bytes: int) -> Iterator[None]:
        """One transaction that stores ``what`` (``n_bytes`` of text); a full disk becomes a
        DiskFullError naming the file."""
        try:
            with self._db:  # one transaction: the whole batch or nothing
                yield
        except sqlite3.OperationalError as error:
            if is_disk_full(error, self.path):
                raise disk_full_error(
                    self.path, f"the {self.kind} keeps every output it held before; {what} "
                    "could not be stored and will be generated again by the next run", error,
                    needed=n_bytes) from error
            raise

    def put_many(self, items: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
        """Store ``(key, output)`` pairs in one transaction and return them as stored: with
        every registered secret redacted (:func:`cultivar_assets.secrets.redact`), since a server
        may put the request's key into its answer. Callers keep the returned outputs, so that
        nothing downstream (database, site, dataset) sees the unredacted text."""
        stored = [(key, redact(output)) for key, output in items]
        size = sum(len(k.encode()) + len(v.encode()) for k, v in stored)
        with self._storing(f"this batch of {len(stored)} output(s)", size):
            self._db.executemany(statement_text("cache_put_output"), stored)
        return stored

    def engine_info(self, fingerprint: str) -> EngineInfo | None:
        row = self._db.execute(statement_text("cache_get_engine_info"),
                               (fingerprint,)).fetchone()
        return EngineInfo(**json.loads(row[0])) if row else None

    def set_engine_info(self, fingerprint: str, info: EngineInfo) -> None:
        text = json.dumps(asdict(info))
        with self._storing("the engine's description", len(text.encode()) + len(fingerprint)):
            self._db.execute(statement_text("cache_put_engine_info"), (fingerprint, text))

    def close(self) -> None:
        self._db.close()


@contextmanager
def model_lock(folder: Path, model_id: str) -> Iterator[None]:
    """Hold ``<folder>/<model id>.lock`` while a run reads, generates and caches the model's
    outputs: a second run of the same model (another process, another Dagster run) waits for the
    first and then finds its outputs in the cache instead of generating them again."""
    from filelock import FileLock, Timeout

    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(folder / f"{model_id}.lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        LOG.warning("another run is translating with %s; waiting for it to finish (%s)",
                    model_id, lock.lock_file)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def request_key(model_fingerprint: str, request: GenerationRequest) -> str:
    blob = json.dumps([model_fingerprint, request.cache_payload()], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def translate(
    spec: ModelSpec,
    test_sets: Sequence[TestSet],
    settings: EngineSettings | None = None,
    cache_dir: Path | None = None,
    progress: ProgressCallback | None = None,
    show_progress_bar: bool = True,
) -> TranslationRun:
    """Translate every segment of ``test_sets`` with ``spec``; see the module docstring."""
    settings = settings or EngineSettings()
    started = time.perf_counter()
    style = get_prompt_style(spec.prompt_style)
    max_new_tokens = int(spec.engine_options.get("max_new_tokens", settings.max_new_tokens))
    fingerprint = run_fingerprint(spec, settings)
    engine_class = engine_registry().get(spec.engine)
    if engine_class.submitted:
        return _submitted(engine_class(spec, settings), test_sets, fingerprint,
                          style.template_hash, started)
    jobs = [
        (test_set, segment, style.request(segment.source, test_set.language, max_new_tokens))
        for test_set in test_sets
        for segment in test_set.segments
    ]
    keys = [request_key(fingerprint, request) for _, _, request in jobs]
    folder = cache_dir or (
        Path(settings.cache_dir) if settings.cache_dir else translation_cache_dir()
    )
    with model_lock(folder, spec.id):
        outputs, info, n_cached, failed = _translate_locked(
            spec, settings, jobs, keys, fingerprint, folder, progress, show_progress_bar)
    if failed:
        raise SegmentFailuresError(spec.id, [
            (test_set.name, segment.segment_id, failed[key])
            for key, (test_set, segment, _) in zip(keys, jobs, strict=True) if key in failed
        ])
    single_line = "\n" in style.definition.get("stop", [])
    rows = []
    for key, (test_set, segment, _) in zip(keys, jobs, strict=True):
        cleaned = clean_output(outputs[key], segment.source, single_line)
        rows.append(TranslationRow(spec.id, test_set.name, segment.segment_id, segment.source,
                                   segment.reference, cleaned.text, outputs[key], cleaned.rules))
    return TranslationRun(spec, fingerprint, info, style.template_hash, rows,
                          len(keys) - n_cached, n_cached, time.perf_counter() - started)


def _submitted(engine, test_sets: Sequence[TestSet], fingerprint: str, template_hash: str,
               started: float) -> TranslationRun:
    """The run of an engine whose outputs were submitted (``outputs``): each segment's
    hypothesis as submitted, uncleaned and uncached (nothing is generated)."""
    outputs = engine.outputs(test_sets)
    rows = [TranslationRow(engine.spec.id, test_set.name, segment.segment_id, segment.source,
                           segment.reference, outputs[(test_set.name, segment.segment_id)],
                           outputs[(test_set.name, segment.segment_id)], ())
            for test_set in test_sets for segment in test_set.segments]
    return TranslationRun(engine.spec, fingerprint, engine.info(), template_hash, rows, 0, 0,
                          time.perf_counter() - started)


def _translate_locked(spec, settings, jobs, keys, fingerprint, folder, progress, show_bar):
    """The cache read, the generation of what is missing and the cache writes (under the lock)."""
    cache = TranslationCache(folder / f"{spec.id}.sqlite")
    try:
        outputs = cache.get_many(keys)
        n_cached = sum(1 for key in keys if key in outputs)  # per segment, repeats included
        pending = sorted(
            {key: request for key, (_, _, request) in zip(keys, jobs, strict=True)
             if key not in outputs}.items(),
            key=lambda item: -len(item[1].prompt or item[1].source),
        )
        info = cache.engine_info(fingerprint)
        failed: dict[str, str] = {}
        if pending or info is None:
            engine = engine_registry().get(spec.engine)(spec, settings)
            try:
                info = engine.info()
                cache.set_engine_info(fingerprint, info)
                _generate(engine, pending, cache, outputs, failed, len(keys), progress,
                          show_bar, spec.id)
            finally:
                engine.close()
        elif progress:
            progress(len(keys), len(keys))
    finally:
        cache.close()
    return outputs, info, n_cached, failed


def _generate(engine, pending, cache, outputs, failed, total, progress, show_bar, label) -> None:
    """Generate ``pending`` in batches, caching each batch; the bar and ``progress(done,
    total)`` advance as the engine reports requests finished (:meth:`~cultivar_assets.engines.
    base.Engine.generate_reporting`: per segment where the engine finishes them one by one)."""
    batch_size = max(1, getattr(engine, "batch_size", 0) or engine.settings.batch_size)
    done = total - len(pending)
    with tqdm(total=total, initial=done, desc=f"translate {label}", unit="seg",
              disable=not show_bar) as bar:
        for start in range(0, len(pending), batch_size):
            batch = pending[start:start + batch_size]
            before = done

            def finished(count: int, before: int = before, size: int = len(batch)) -> None:
                nonlocal done
                if count < 0 or done + count > before + size:
                    raise RuntimeError(f"engine {engine.name} reported {done - before + count} "
                                       f"requests finished of a batch of {size}")
                done += count
                bar.update(count)
                if progress:
                    progress(done, total)

            raws = engine.generate_reporting([request for _, request in batch], finished)
            if len(raws) != len(batch):
                raise RuntimeError(
                    f"engine {engine.name} returned {len(raws)} outputs for {len(batch)} requests"
                )
            if done != before + len(batch):
                raise RuntimeError(f"engine {engine.name} reported {done - before} requests "
                                   f"finished of a batch of {len(batch)}")
            items = []
            for (key, _), raw in zip(batch, raws, strict=True):
                if isinstance(raw, str):
                    items.append((key, raw))
                else:  # a GenerationFailure: reported, never stored as a translation
                    failed[key] = redact(str(raw))
            outputs.update(cache.put_many(items))
