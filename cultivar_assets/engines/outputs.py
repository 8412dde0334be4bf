"""The outputs engine: a submission's hypotheses, produced elsewhere, scored here (ours).

A registry entry ``engine: outputs`` with ``path:`` (the submission's folder or its manifest;
:mod:`cultivar_assets.engines.submission`) runs nothing: its translations are the submission's
hypotheses, as submitted (no cleaning rule is applied). Its fingerprint
(:func:`~cultivar_assets.engines.fingerprint.run_fingerprint`) holds the submission's content
hash, so a changed file is scored again and an unchanged one is not. Its run record names the
system that produced the outputs (the manifest's ``produced``), which the model card and the
leaderboard show ("outputs submitted, produced with ..., not run here").
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

from cultivar_assets.data.testsets import TestSet
from cultivar_assets.engines.base import Engine, EngineInfo, EngineLoadError
from cultivar_assets.engines.prompts import GenerationRequest
from cultivar_assets.engines.submission import (
    Submission,
    SubmissionError,
    check_coverage,
    content_sha256,
    read_submission,
)
from cultivar_assets.specs import ModelSpec

SUBMITTED_PREFIX = "outputs submitted, produced with "
NOT_RUN_HERE = ", not run here"


def submission_of(spec: ModelSpec) -> Path:
    if not spec.path:
        raise EngineLoadError(f"{spec.id}: the outputs engine needs path (the submission's "
                              "folder or manifest)")
    return Path(spec.path)


def submitted_note(engine: str | None, engine_version: str | None) -> str | None:
    """"outputs submitted, produced with <system> <version>, not run here" for a stored run of
    the outputs engine (its ``engine_version``, :meth:`OutputsEngine.info`); None for any other
    run."""
    if engine != "outputs" or not (engine_version or "").startswith(SUBMITTED_PREFIX):
        return None
    return engine_version.split("; ", 1)[0]


class OutputsEngine(Engine):
    name = "outputs"
    prompt_kinds = ("source",)
    output_settings = ()
    submitted = True  # translation.translate takes its outputs, never generates

    @classmethod
    def content_fingerprint(cls, spec: ModelSpec) -> str:
        """What the outputs depend on besides the entry: the submission's bytes."""
        return content_sha256(submission_of(spec))

    @cached_property
    def _submission(self) -> Submission:
        """The submission, read and checked once per engine (its run record and its outputs)."""
        try:
            submission = read_submission(submission_of(self.spec))
        except SubmissionError as error:
            raise EngineLoadError(f"{self.spec.id}: {error}") from None
        if submission.model_id != self.spec.id:
            raise EngineLoadError(f"{self.spec.id}: the submission at {self.spec.path} is of "
                                  f"{submission.model_id!r}")
        return submission

    def info(self) -> EngineInfo:
        submission = self._submission
        produced = submission.produced
        # the production fields, as the run record stores them (model card, leaderboard)
        # the prompt last: it is free text (it may hold "; ")
        version = (f"{SUBMITTED_PREFIX}{produced['system']} {produced['version']}{NOT_RUN_HERE}"
                   f"; dated {produced['date']}; submission sha256 {submission.sha256[:16]}"
                   f"; prompt: {produced['prompt']}")
        return EngineInfo(self.name, version, self.spec.revision, None)

    def outputs(self, test_sets: Sequence[TestSet]) -> dict[tuple[str, int], str]:
        """The hypothesis of every segment of ``test_sets`` (EngineLoadError listing every
        problem when the submission does not cover them exactly)."""
        submission = self._submission
        try:
            check_coverage(submission, test_sets)
        except SubmissionError as error:
            raise EngineLoadError(f"{self.spec.id}: {error}") from None
        return submission.hypotheses

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        raise EngineLoadError(f"{self.spec.id}: submitted outputs answer test-set segments "
                              "only (translation.translate), not requests")
