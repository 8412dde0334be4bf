"""LLM localisation (paper §2.2): one request per selected instance and locale, through an engine.

For each locale and each selected instance (original source in the locale's language and the
original English), the prompt template (``localisation_prompts.py``) is filled with the names from
the locale registry and sent to the configured engine (any registered engine: ``openai`` for
hosted or served models, ``vllm``, ``transformers``). The answer is read by
:func:`~cultivar_assets.construction.localisation_answer.parse_answer`; a malformed answer is
tried again up to ``max_attempts`` times (chat templates send the answer back with the template's
retry message), then kept as a *flagged* draft with its raw answer and the reason: never dropped,
never replaced by the original.

**Cache.** Every answer is stored on disk (SQLite, ``<cache_dir>/<localiser id>.sqlite``, the
translation cache's machinery: :class:`cultivar_assets.translation.TranslationCache`) under the
sha256 of (engine fingerprint, prompt hash, attempt number, the full request); each chunk of
requests is committed as soon as it is answered, so a killed run resumes where it stopped and no
request is sent twice; a second run of the same localiser waits for the first (the translation
cache's per-model lock) and then finds its answers cached. The engine fingerprint
(:func:`engines.fingerprint.engine_fingerprint`) holds the model, its revision and weights, the
engine and the engine options that change answers (not the transport ones: batch size, server
address, concurrency, retries).

**Chunks** (ours): a locale's requests of one attempt are cut, in instance-id order, into chunks
of ``engine_options.batch_size`` (16 when not set); a chunk is sent to the engine as one call and
committed as a whole. Chunks are fixed by the instance list, not by what is cached, so a resumed
run sends exactly the batches an uninterrupted run would (local engines' greedy answers can depend
on the other rows of a batch). Concurrency within a chunk and the back-off on 429/5xx/time-outs
are the engine's own (the ``openai`` engine: ``max_concurrency``, the client's retries).

**Usage and cost.** Token usage per draft is the sum over its attempts of what the engine reports
(the server's ``usage`` for ``openai``; the tokenizer's counts for ``transformers``). The
estimated cost of a locale is ``input_tokens × price_input_per_million / 10⁶ + output_tokens ×
price_output_per_million / 10⁶`` over every answer its drafts use (cached or not); "this run"
counts only the answers generated now. No prices configured: no cost.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from cultivar_assets.construction.config import LocalisationConfig
from cultivar_assets.construction.drafts import (
    Draft,
    configured_localiser,
    drafts_hash,
    task_id,
)
from cultivar_assets.construction.errors import ConstructionError
from cultivar_assets.construction.localisation_answer import MalformedAnswer, parse_answer
from cultivar_assets.construction.localisation_prompts import (
    LocalisationPrompt,
    get_prompt,
    prompt_values,
)
from cultivar_assets.data.locales import get_locale
from cultivar_assets.engines import engine_registry
from cultivar_assets.engines.base import Engine, EngineInfo, EngineSettings, Generation
from cultivar_assets.engines.fingerprint import engine_fingerprint
from cultivar_assets.engines.prompts import GenerationRequest
from cultivar_assets.paths import cultivar_home
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


class LocalisationFailuresError(RuntimeError):
    """Some requests got no answer after the engine's own retries; nothing was written.

    Every answer that came back is cached, so running again sends only these requests.
    """

    def __init__(self, failures: list[tuple[str, int, str]]) -> None:
        self.failures = failures  # (locale, instance id, reason)
        listing = "; ".join(f"{loc}_{iid} ({why})" for loc, iid, why in failures[:5])
        more = f" and {len(failures) - 5} more" if len(failures) > 5 else ""
        super().__init__(f"{len(failures)} localisation request(s) failed: {listing}{more}. "
                         "The other answers are cached; run again to send only these.")


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
    """Each locale's pairs from the selection (``selection_store.read_selected_sources``)."""
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
    with model_lock(folder, localiser.spec.id):  # a second run waits, then reads the cache
        cache = TranslationCache(folder / f"{localiser.spec.id}.sqlite")
        pool = _shared_pool or EnginePool()
        info = cache.engine_info(localiser.fingerprint)
        n_requests = n_generated = 0
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
                n_requests += len(keys)
                for chunk in _chunks(pending, chunk_size):
                    todo = [i for i in chunk if keys[i] not in stored]
                    if not todo:
                        bar.update(len(chunk))
                        continue
                    engine = pool.get(localiser)
                    if info is None:
                        info = engine.info()
                        cache.set_engine_info(localiser.fingerprint, info)
                    answers = engine.generate_detailed([requests[i] for i in todo])
                    if len(answers) != len(todo):
                        raise RuntimeError(f"engine {localiser.spec.engine} returned "
                                           f"{len(answers)} answers for {len(todo)} requests")
                    items = []
                    for i, answer in zip(todo, answers, strict=True):
                        if isinstance(answer, Generation):
                            items.append((keys[i], _encode(answer)))
                        else:  # a request that failed for good: reported, never cached
                            pending[i].failure = str(answer)
                    cache.put_many(items)  # committed: a killed run keeps every finished chunk
                    stored.update(items)
                    fresh.update(key for key, _ in items)
                    n_generated += len(items)
                    bar.update(len(chunk))
                    say(f"{pending[chunk[0]].locale}: {len(items)} answers generated and cached "
                        f"(attempt {attempt}, {bar.n}/{bar.total} requests)")
                still = []
                for i, job in enumerate(pending):
                    if job.failure is not None:
                        continue
                    value = json.loads(stored[keys[i]])
                    job.answers.append((value["text"], value["prompt_tokens"],
                                        value["completion_tokens"], keys[i] in fresh))
                    parsed = _read(prompt, job, value["text"])
                    if isinstance(parsed, MalformedAnswer):
                        job.reasons.append(parsed.reason)
                        if retry and attempt < config.max_attempts:
                            still.append(job)
                            bar.total += 1
                            continue
                        job.result = _draft(job, prompt, None)
                    else:
                        job.result = _draft(job, prompt, parsed)
                pending = still
        finally:
            bar.close()
            cache.close()
            if pool is not _shared_pool:
                pool.close()
    failures = [(j.locale, j.pair.instance_id, j.failure) for j in jobs if j.failure]
    if failures:
        raise LocalisationFailuresError(failures)
    if info is None:
        info = cache_info(localiser, folder)
    if info is None:
        raise ConstructionError("nothing to localise: no selected instances for these locales")
    locales = {}
    for locale in inputs:
        mine = [j for j in jobs if j.locale == locale]
        locales[locale] = LocaleDrafts(locale, tuple(_localised(j) for j in mine),
                                       localiser.prices)
    return LocalisationRun(localiser, info, locales, n_requests, n_generated,
                           time.perf_counter() - started)


def cache_info(localiser: Localiser, folder: Path) -> EngineInfo | None:
    cache = TranslationCache(folder / f"{localiser.spec.id}.sqlite")
    try:
        return cache.engine_info(localiser.fingerprint)
    finally:
        cache.close()


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
