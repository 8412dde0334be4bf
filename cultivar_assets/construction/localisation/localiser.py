"""LLM localisation (paper §2.2): one request per selected instance and locale, through an engine.

For each locale and selected instance, the prompt template (``prompts.py``) is filled with the
locale registry's names and sent to the configured engine; the answer is read by
:func:`~cultivar_assets.construction.localisation.answer.parse_answer`, a malformed one tried
again up to ``max_attempts`` times, then kept as a *flagged* draft with its raw answer and reason.
Every answer is cached on disk as it arrives (``<cache_dir>/<localiser id>.sqlite``, the
:class:`~cultivar_assets.translation.TranslationCache` machinery, with its per-model lock) under
the sha256 of (engine fingerprint, prompt hash, attempt number, the full request); the engine
fingerprint leaves out transport options (batch size, address, concurrency, retries).
Submitting (ours): an engine whose requests are answered alone (``answers_alone``) gets every
uncached request of an attempt as one stream, ``max_concurrency`` in flight; other engines get
each locale's requests in instance-id chunks of ``engine_options.batch_size`` (16), fixed by the
instance list, each committed whole. A failed run writes nothing to the database and raises
:class:`LocalisationFailuresError` (counts, tokens, cost, and the failures file
``<cache_dir>/failures/<localiser id>-<UTC time>.json``). Usage per draft is the sum over its
attempts of what the engine reports; a locale's estimated cost is ``input_tokens ×
price_input_per_million / 10⁶ + output_tokens × price_output_per_million / 10⁶`` over the answers
its drafts use (none without prices). Details: ``docs/building-a-benchmark.md``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from tqdm import tqdm

from cultivar_assets.construction.config import LocalisationConfig
from cultivar_assets.construction.errors import ConstructionError
from cultivar_assets.construction.localisation.answer import MalformedAnswer, parse_answer
from cultivar_assets.construction.localisation.drafts import (
    Draft,
    configured_localiser,
    drafts_hash,
    task_id,
)
from cultivar_assets.construction.localisation.prompts import (
    LocalisationPrompt,
    get_prompt,
    prompt_values,
)
from cultivar_assets.data.locales import get_locale
from cultivar_assets.engines import engine_registry
from cultivar_assets.engines.base import (
    Engine,
    EngineInfo,
    EngineLoadError,
    EngineSettings,
    Generation,
    GenerationFailure,
)
from cultivar_assets.engines.fingerprint import engine_fingerprint
from cultivar_assets.engines.prompts import GenerationRequest
from cultivar_assets.paths import cultivar_home
from cultivar_assets.secrets import redact
from cultivar_assets.specs import ModelSpec
from cultivar_assets.translation import TranslationCache, model_lock, request_key

DEFAULT_CHUNK = 16


def localisation_cache_dir() -> Path:
    return cultivar_home() / "cache" / "localisation"


@dataclass(frozen=True)
class SourcePair:
    """One selected instance in one source language: what the localiser is given."""

    instance_id: int
    source: str
    english: str


@dataclass(frozen=True)
class LocalisedDraft:
    """A draft with what it cost: attempts, token usage (None: not reported), answers made now."""

    draft: Draft
    attempts: int
    prompt_tokens: int | None
    completion_tokens: int | None
    generated: int  # answers generated in this run (0: every answer came from the cache)
    generated_prompt_tokens: int | None = None
    generated_completion_tokens: int | None = None


def _total(values: Sequence[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


@dataclass(frozen=True)
class Prices:
    input_per_million: float
    output_per_million: float
    currency: str

    def cost(self, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        if prompt_tokens is None or completion_tokens is None:
            return None
        return (prompt_tokens * self.input_per_million
                + completion_tokens * self.output_per_million) / 1e6


@dataclass(frozen=True)
class LocaleDrafts:
    """One locale's drafts (ids ascending) and their totals."""

    locale: str
    drafts: tuple[LocalisedDraft, ...]
    prices: Prices | None

    @property
    def records(self) -> list[Draft]:
        return [d.draft for d in self.drafts]

    @property
    def drafts_hash(self) -> str:
        return drafts_hash(self.records)

    @property
    def task_id(self) -> str:
        return task_id(self.locale, self.records)

    def totals(self) -> dict[str, int | float | None]:
        """Counts, tokens and estimated costs (module docstring)."""
        drafts = self.drafts
        prompt = _total([d.prompt_tokens for d in drafts])
        completion = _total([d.completion_tokens for d in drafts])
        now_prompt = _total([d.generated_prompt_tokens for d in drafts if d.generated])
        now_completion = _total([d.generated_completion_tokens for d in drafts if d.generated])
        return {
            "n_drafts": len(drafts),
            "n_flagged": sum(d.draft.flagged for d in drafts),
            "n_retried": sum(d.attempts > 1 for d in drafts),
            "n_unchanged": sum(not d.draft.flagged and (d.draft.source_draft,
                                                        d.draft.english_draft)
                               == (d.draft.source_original, d.draft.english_original)
                               for d in drafts),
            "n_generated": sum(d.generated for d in drafts),
            "prompt_tokens": prompt, "completion_tokens": completion,
            "estimated_cost": self.prices.cost(prompt, completion) if self.prices else None,
            "estimated_cost_this_run": (self.prices.cost(now_prompt or 0, now_completion or 0)
                                        if self.prices and now_prompt is not None
                                        and now_completion is not None else None),
        }


@dataclass(frozen=True)
class Localiser:
    """The configured localiser: engine spec, fingerprint, prompt template."""

    config: LocalisationConfig
    spec: ModelSpec
    fingerprint: str
    prompt: LocalisationPrompt

    @property
    def label(self) -> str:
        """What ran (``drafts.localiser_description``): never the prompt template's words."""
        return configured_localiser(self.config)

    @property
    def prices(self) -> Prices | None:
        c = self.config
        if c.price_input_per_million is None or c.price_output_per_million is None:
            return None
        return Prices(c.price_input_per_million, c.price_output_per_million, c.price_currency)

    def recorded_options(self) -> dict:
        """Engine options that change answers (what the fingerprint holds; no transport)."""
        engine = engine_registry().get(self.spec.engine)
        return {k: v for k, v in self.spec.engine_options.items()
                if k not in engine.transport_options}


@dataclass(frozen=True)
class LocalisationRun:
    localiser: Localiser
    info: EngineInfo
    locales: dict[str, LocaleDrafts]
    n_requests: int  # answers the drafts use (every attempt)
    n_generated: int  # of which generated now
    seconds: float


@dataclass(frozen=True)
class RequestFailure:
    """A request of this run that got no usable answer: why, and what the server reported as
    spent on it (None: no answer, or no usage)."""

    locale: str
    instance_id: int
    attempt: int
    reason: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass
class RunSpend:
    """What a run's requests came to so far (the failure report; module docstring)."""

    n_requests: int = 0  # requests the drafts need, every attempt counted so far
    n_cached: int = 0  # of which answered by earlier runs (in the cache)
    n_generated: int = 0  # answered and cached in this run
    prompt_tokens: int = 0  # this run: answers generated and answers that failed for good
    completion_tokens: int = 0
    failed_prompt_tokens: int = 0  # of which in answers that failed for good
    failed_completion_tokens: int = 0
    n_unreported: int = 0  # answers of this run whose usage the engine did not report

    def add(self, answer: Generation | GenerationFailure) -> None:
        failed = isinstance(answer, GenerationFailure)
        if isinstance(answer, Generation) and (answer.prompt_tokens is None
                                               or answer.completion_tokens is None):
            self.n_unreported += 1
        prompt, completion = answer.prompt_tokens or 0, answer.completion_tokens or 0
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        if failed:
            self.failed_prompt_tokens += prompt
            self.failed_completion_tokens += completion

    def as_dict(self, prices: Prices | None) -> dict:
        return {**asdict(self), "estimated_cost": (
            prices.cost(self.prompt_tokens, self.completion_tokens) if prices else None),
            "currency": prices.currency if prices else None}


class LocalisationFailuresError(RuntimeError):
    """Some requests got no answer after the engine's own retries, or the run stopped on a
    configuration error (``stopped``); nothing was written to the database.

    Every answer that came back is cached, so running again sends only the requests without
    one. The message says how many are answered and cached, what this run spent (tokens,
    estimated cost) and names the file (``failures_file``) that lists every failure.
    """

    def __init__(self, failures: list[RequestFailure], spend: RunSpend, prices: Prices | None,
                 failures_file: Path, stopped: str | None = None) -> None:
        self.failures = failures
        self.spend = spend
        self.failures_file = failures_file
        self.stopped = stopped
        if stopped:
            head = f"localisation stopped: {stopped}"
        else:
            listing = "; ".join(f"{f.locale}_{f.instance_id} ({f.reason})" for f in failures[:5])
            more = f" and {len(failures) - 5} more" if len(failures) > 5 else ""
            head = f"{len(failures)} localisation request(s) failed: {listing}{more}"
        answered = spend.n_cached + spend.n_generated
        missing = spend.n_requests - answered - len(failures)
        if answered:
            state = (f"{answered} of {spend.n_requests} requests are answered and cached "
                     f"({spend.n_generated} in this run, {spend.n_cached} by earlier runs)")
        else:
            state = f"none of the {spend.n_requests} requests is answered (nothing is cached)"
        state += f"; {len(failures)} failed"
        if missing:
            state += f", {missing} got no answer (not sent, or stopped)"
        again = ("fix what stopped it and run again" if stopped else
                 "run again to send only the requests without an answer")
        super().__init__(f"{head.rstrip('.')}. {state[0].upper()}{state[1:]}. "
                         f"{_spend_line(spend, prices)} Nothing was written to the database; "
                         f"{again}. Every failure: {failures_file}")


def _spend_line(spend: RunSpend, prices: Prices | None) -> str:
    tokens = f"{spend.prompt_tokens} + {spend.completion_tokens} tokens (prompt + completion"
    if spend.failed_prompt_tokens or spend.failed_completion_tokens:
        tokens += (f"; {spend.failed_prompt_tokens} + {spend.failed_completion_tokens} of them "
                   "in answers that could not be used")
    tokens += ")"
    if spend.n_unreported:
        tokens += f", and {spend.n_unreported} answer(s) whose usage the engine did not report"
    cost = spend.as_dict(prices)["estimated_cost"]
    money = (f"estimated cost {cost:.4f} {prices.currency}" if prices and cost is not None
             else "no prices configured")
    return f"This run spent {tokens}; {money}."


KEEP_FAILURE_FILES = 20  # ours: failure files kept per localiser, the newest


def write_failures(folder: Path, localiser: Localiser, failures: Sequence[RequestFailure],
                   spend: RunSpend, stopped: str | None) -> Path:
    """The complete list of a failed run's failures: ``<cache folder>/failures/<localiser
    id>-<UTC time>.json`` (written aside, then renamed: never half-written). Only the newest
    :data:`KEEP_FAILURE_FILES` of one localiser are kept: older ones are removed once the new
    one is in place."""
    target_dir = folder / "failures"
    target_dir.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    path = target_dir / f"{localiser.spec.id}-{stamp}.json"
    n = 1
    while path.exists():
        n += 1
        path = target_dir / f"{localiser.spec.id}-{stamp}-{n}.json"
    record = {
        "localiser": localiser.spec.id, "engine": localiser.spec.engine,
        "model": localiser.config.model, "prompt": localiser.prompt.name,
        "finished_at": now.isoformat(timespec="seconds"), "stopped": stopped,
        "spend": spend.as_dict(localiser.prices), "n_failures": len(failures),
        "failures": [asdict(f) for f in failures],
    }
    partial = path.with_name(path.name + ".partial")
    partial.write_text(redact(json.dumps(record, ensure_ascii=False, indent=1)), "utf-8")
    os.replace(partial, path)
    _prune_failures(target_dir, localiser.spec.id)
    return path


def _prune_failures(target_dir: Path, localiser_id: str) -> None:
    """Remove all but the newest :data:`KEEP_FAILURE_FILES` failure files of ``localiser_id``
    (newest by modification time, then name)."""
    pattern = re.compile(re.escape(localiser_id) + r"-\d{8}T\d{6}Z(-\d+)?\.json")
    own = [p for p in target_dir.iterdir() if pattern.fullmatch(p.name)]
    own.sort(key=lambda p: (p.stat().st_mtime_ns, p.name), reverse=True)
    for old in own[KEEP_FAILURE_FILES:]:
        old.unlink(missing_ok=True)


def _spec_id(model: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._+-]+", "--", model).strip("-.") or "model"
    return f"localiser-{slug}"[:96]


def make_localiser(config: LocalisationConfig) -> Localiser:
    """The localiser of ``config`` (unknown engine, weights or prompt: a ConstructionError)."""
    engines = engine_registry()
    if config.engine not in engines:
        raise ConstructionError(f"localisation: unknown engine {config.engine!r} (known: "
                                f"{', '.join(engines.names())})")
    try:
        prompt = get_prompt(config.prompt, config.prompts_file)
    except (KeyError, ValueError) as error:
        if isinstance(error, ConstructionError):
            raise
        raise ConstructionError(f"localisation: {error}") from None
    kinds = engines.get(config.engine).prompt_kinds
    if prompt.kind not in kinds:
        raise ConstructionError(f"localisation: engine {config.engine!r} takes "
                                f"{', '.join(kinds)} prompts, not {prompt.kind!r} (template "
                                f"{prompt.name!r})")
    spec = ModelSpec(id=_spec_id(config.model), hf_id=config.model, revision=config.revision,
                     weights=config.weights, type="LLM", family="localiser",
                     engine=config.engine, prompt_style=f"localisation:{prompt.name}",
                     engine_options=dict(config.engine_options))
    return Localiser(config, spec, engine_fingerprint(spec, EngineSettings()), prompt)


class EnginePool:
    """Loaded engines by fingerprint, closed together (so several calls load a model once)."""

    def __init__(self) -> None:
        self._engines: dict[str, Engine] = {}

    def get(self, localiser: Localiser) -> Engine:
        if localiser.fingerprint not in self._engines:
            engine_class = engine_registry().get(localiser.spec.engine)
            self._engines[localiser.fingerprint] = engine_class(localiser.spec, EngineSettings())
        return self._engines[localiser.fingerprint]

    def close(self) -> None:
        engines, self._engines = self._engines, {}
        for engine in engines.values():
            engine.close()


_shared_pool: EnginePool | None = None


@contextmanager
def shared_engines() -> Iterator[EnginePool]:
    """Within this block, :func:`localise` calls in this process share loaded engines (the
    runner localises the demo's locales in one run per locale but loads the model once)."""
    global _shared_pool
    pool, previous = EnginePool(), _shared_pool
    _shared_pool = pool
    try:
        yield pool
    finally:
        _shared_pool = previous
        pool.close()


def localisation_inputs(selected: Mapping[int, Mapping], locales: Sequence[str]
                        ) -> dict[str, list[SourcePair]]:
    """Each locale's pairs from the selection (``selection.store.read_selected_sources``)."""
    if not selected:
        raise ConstructionError("no instances are selected; materialise selected_instances "
                                "(cultivar build select) first")
    inputs: dict[str, list[SourcePair]] = {}
    for locale in locales:
        language = get_locale(locale).source_language
        lacking = [iid for iid, item in selected.items() if language not in item["sources"]]
        if lacking:
            raise ConstructionError(
                f"localisation of {locale}: the source benchmark has no {language} sentence for "
                f"{len(lacking)} selected instance(s) ({', '.join(map(str, lacking[:10]))}); "
                "choose a source benchmark with this language, or leave the locale out")
        pairs = []
        for iid in sorted(selected):
            item = selected[iid]
            source, english = item["sources"][language], item["english"]
            if not source.strip() or not english.strip():
                raise ConstructionError(f"localisation of {locale}: instance {iid} has an empty "
                                        f"{'source' if not source.strip() else 'English'} text")
            pairs.append(SourcePair(iid, source, english))
        inputs[locale] = pairs
    return inputs


@dataclass
class _Job:
    locale: str
    pair: SourcePair
    values: dict[str, str]
    answers: list[tuple[str, int | None, int | None, bool]] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    result: Draft | None = None
    failure: str | None = None


def _key(localiser: Localiser, attempt: int, request: GenerationRequest) -> str:
    scope = hashlib.sha256(json.dumps(
        [localiser.fingerprint, localiser.prompt.prompt_hash, attempt]).encode()).hexdigest()
    return request_key(scope, request)


def _encode(generation: Generation) -> str:
    return json.dumps({"text": generation.text, "prompt_tokens": generation.prompt_tokens,
                       "completion_tokens": generation.completion_tokens}, ensure_ascii=False)


def localise(
    inputs: Mapping[str, Sequence[SourcePair]],
    config: LocalisationConfig,
    *,
    cache_dir: Path | None = None,
    show_bar: bool = True,
    say: Callable[[str], None] = lambda _message: None,
) -> LocalisationRun:
    """Drafts for every locale of ``inputs`` (see the module docstring)."""
    started = time.perf_counter()
    localiser = make_localiser(config)
    prompt = localiser.prompt
    folder = cache_dir or (Path(config.cache_dir) if config.cache_dir
                           else localisation_cache_dir())
    chunk_size = int(config.engine_options.get("batch_size") or DEFAULT_CHUNK)
    jobs = [_Job(locale, pair, prompt_values(locale, pair.source, pair.english))
            for locale, pairs in inputs.items() for pair in pairs]
    streams = engine_registry().get(localiser.spec.engine).answers_alone
    failures: list[RequestFailure] = []
    spend = RunSpend()
    stopped: str | None = None
    with model_lock(folder, localiser.spec.id):  # a second run waits, then reads the cache
        cache = TranslationCache(folder / f"{localiser.spec.id}.sqlite", "localisation cache")
        pool = _shared_pool or EnginePool()
        info = cache.engine_info(localiser.fingerprint)
        retry = prompt.can_retry or config.retry_same_prompt
        bar = tqdm(total=len(jobs), desc=f"localise ({localiser.spec.id})", unit="request",
                   disable=not show_bar)
        try:
            pending = jobs
            for attempt in range(1, config.max_attempts + 1):
                if not pending:
                    break
                requests = [prompt.request(
                    job.values, config.max_new_tokens,
                    tuple(zip([a[0] for a in job.answers], job.reasons, strict=True))
                    if prompt.kind == "chat" else ()) for job in pending]
                keys = [_key(localiser, attempt, r) for r in requests]
                stored = cache.get_many(keys)
                fresh: set[str] = set()
                spend.n_requests += len(keys)
                spend.n_cached += sum(key in stored for key in keys)
                todo = [i for i, key in enumerate(keys) if key not in stored]
                bar.update(len(keys) - len(todo))
                if todo:
                    engine = pool.get(localiser)
                    if info is None:
                        info = engine.info()
                        cache.set_engine_info(localiser.fingerprint, info)
                    said = 0
                    try:
                        for arrived in _arrivals(engine, streams, pending, requests, todo,
                                                 chunk_size):
                            items = []
                            for i, answer in arrived:
                                spend.add(answer)
                                if isinstance(answer, Generation):
                                    items.append((keys[i], _encode(answer)))
                                else:  # failed for good: reported, never cached
                                    pending[i].failure = str(answer)
                                    failures.append(RequestFailure(
                                        pending[i].locale, pending[i].pair.instance_id, attempt,
                                        str(answer), answer.prompt_tokens,
                                        answer.completion_tokens))
                            # committed: a killed run keeps each answer; secrets redacted
                            stored.update(cache.put_many(items))
                            fresh.update(key for key, _ in items)
                            spend.n_generated += len(items)
                            bar.update(len(arrived))
                            if spend.n_generated - said >= chunk_size:
                                said = spend.n_generated
                                say(f"{spend.n_generated} answers generated and cached (attempt "
                                    f"{attempt}, {bar.n}/{bar.total} requests)")
                    except EngineLoadError as error:
                        if not failures and not spend.n_generated:
                            raise  # nothing was answered: the engine's error as it is
                        stopped = str(error)
                        break
                pending = _read_answers(pending, keys, stored, fresh, prompt, attempt,
                                        config.max_attempts if retry else attempt, bar)
        finally:
            bar.close()
            cache.close()
            if pool is not _shared_pool:
                pool.close()
        if failures or stopped:
            order = {locale: n for n, locale in enumerate(inputs)}
            failures.sort(key=lambda f: (order[f.locale], f.instance_id, f.attempt))
            path = write_failures(folder, localiser, failures, spend, stopped)
            raise LocalisationFailuresError(failures, spend, localiser.prices, path, stopped)
    if info is None:
        info = cache_info(localiser, folder)
    if info is None:
        raise ConstructionError("nothing to localise: no selected instances for these locales")
    locales = {}
    for locale in inputs:
        mine = [j for j in jobs if j.locale == locale]
        locales[locale] = LocaleDrafts(locale, tuple(_localised(j) for j in mine),
                                       localiser.prices)
    return LocalisationRun(localiser, info, locales, spend.n_requests, spend.n_generated,
                           time.perf_counter() - started)


def cache_info(localiser: Localiser, folder: Path) -> EngineInfo | None:
    cache = TranslationCache(folder / f"{localiser.spec.id}.sqlite", "localisation cache")
    try:
        return cache.engine_info(localiser.fingerprint)
    finally:
        cache.close()


def _arrivals(engine: Engine, streams: bool, pending: Sequence[_Job],
              requests: Sequence[GenerationRequest], todo: Sequence[int], chunk_size: int
              ) -> Iterator[list[tuple[int, Generation | GenerationFailure]]]:
    """The answers to ``todo`` (indices of ``pending``) as they arrive, in groups committed
    together: one answer at a time from an engine that answers each request alone (submitted
    continuously, ``max_concurrency`` in flight), a whole chunk from the others."""
    if streams:
        for j, answer in engine.generate_as_completed([requests[i] for i in todo]):
            yield [(todo[j], answer)]
        return
    wanted = set(todo)
    for chunk in _chunks(pending, chunk_size):
        sent = [i for i in chunk if i in wanted]
        if not sent:
            continue
        answers = engine.generate_detailed([requests[i] for i in sent])
        if len(answers) != len(sent):
            raise RuntimeError(f"engine {engine.spec.engine} returned {len(answers)} answers "
                               f"for {len(sent)} requests")
        yield list(zip(sent, answers, strict=True))


def _read_answers(pending: list[_Job], keys: Sequence[str], stored: Mapping[str, str],
                  fresh: set[str], prompt: LocalisationPrompt, attempt: int, last_attempt: int,
                  bar: tqdm) -> list[_Job]:
    """Read each answered job's answer: a draft, or (malformed, attempts left) a job for the
    next attempt, which is returned."""
    still = []
    for i, job in enumerate(pending):
        if job.failure is not None or keys[i] not in stored:
            continue
        value = json.loads(stored[keys[i]])
        job.answers.append((value["text"], value["prompt_tokens"],
                            value["completion_tokens"], keys[i] in fresh))
        parsed = _read(prompt, job, value["text"])
        if isinstance(parsed, MalformedAnswer):
            job.reasons.append(parsed.reason)
            if attempt < last_attempt:
                still.append(job)
                bar.total += 1
                continue
            job.result = _draft(job, prompt, None)
        else:
            job.result = _draft(job, prompt, parsed)
    return still


def _chunks(pending: Sequence[_Job], size: int) -> Iterator[list[int]]:
    """Indices of ``pending`` cut into chunks of ``size`` within each locale, in order."""
    by_locale: dict[str, list[int]] = {}
    for i, job in enumerate(pending):
        by_locale.setdefault(job.locale, []).append(i)
    for indices in by_locale.values():
        for start in range(0, len(indices), size):
            yield indices[start:start + size]


def _read(prompt: LocalisationPrompt, job: _Job, text: str):
    values = job.values
    return parse_answer(prompt.answer_prefix(values) + text, values["src_name"],
                        values["tgt_name"], prompt.stop)


def _draft(job: _Job, prompt: LocalisationPrompt, parsed) -> Draft:
    pair = job.pair
    attempts = len(job.answers)
    if parsed is None:
        reason = job.reasons[-1]
        if attempts > 1:
            reason += f" (after {attempts} attempts)"
        source = english = None
    else:
        reason, source, english = None, parsed.source, parsed.english
    return Draft(locale=job.locale, instance_id=pair.instance_id, source_original=pair.source,
                 english_original=pair.english, source_draft=source, english_draft=english,
                 raw_answer=job.answers[-1][0], flagged=parsed is None, flag_reason=reason,
                 prompt_hash=prompt.prompt_hash)


def _localised(job: _Job) -> LocalisedDraft:
    assert job.result is not None
    now = [a for a in job.answers if a[3]]
    return LocalisedDraft(
        draft=job.result, attempts=len(job.answers),
        prompt_tokens=_total([a[1] for a in job.answers]),
        completion_tokens=_total([a[2] for a in job.answers]),
        generated=len(now),
        generated_prompt_tokens=_total([a[1] for a in now]) if now else None,
        generated_completion_tokens=_total([a[2] for a in now]) if now else None)
