"""One generic registry for named entries, with lazy entries (after lm-evaluation-harness).

An entry is either an object or a ``"package.module:attribute"`` string that is imported the first
time the entry is asked for, so that registering, say, the vLLM engine costs nothing until a run
uses it.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterator
from importlib import metadata
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownEntryError(KeyError, ValueError):
    """Raised for a name that is not registered; the message lists close matches.

    A ValueError too, so that configuration validation reports it as a validation error.
    """

    def __str__(self) -> str:  # KeyError quotes its argument; we want the plain message
        return str(self.args[0])


class Registry(Generic[T]):
    """A mapping from names to entries of one kind (locales, models, engines, ...)."""

    def __init__(self, kind: str, *, where: str | None = None) -> None:
        self.kind = kind
        self.where = where  # the file the entries came from, named when a name is unknown
        self._entries: dict[str, T | str] = {}

    def register(self, name: str, entry: T | str, *, overwrite: bool = False) -> None:
        """Add ``entry`` under ``name``; a string ``"module:attr"`` is resolved lazily."""
        if not name or not isinstance(name, str):
            raise ValueError(f"{self.kind} name must be a non-empty string, got {name!r}")
        if name in self._entries and not overwrite:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = entry

    def register_entry_points(self, group: str) -> list[str]:
        """Add the entries that installed distributions declare in the entry-point ``group``
        (``[project.entry-points."<group>"]`` in their ``pyproject.toml``: ``name =
        "module:attribute"``), lazily, as :meth:`register` does; returns their names.

        How third parties add entries without editing this package (as pytest plugins and
        lm-evaluation-harness do). A name that is already registered, built in or declared by
        another distribution, is an error naming the distribution (ours: no silent override)."""
        added = []
        for point in sorted(metadata.entry_points(group=group), key=lambda p: p.name):
            where = point.dist.name if point.dist is not None else "an unnamed distribution"
            if point.name in self._entries:
                raise ValueError(
                    f"{self.kind} {point.name!r} declared by {where}'s entry point "
                    f"{point.value!r} (group {group}) is already registered; rename one of them")
            if ":" not in point.value:
                raise ValueError(f"{self.kind} {point.name!r} declared by {where} (group "
                                 f"{group}) must be 'module:attribute', not {point.value!r}")
            self.register(point.name, point.value)
            added.append(point.name)
        return added

    def get(self, name: str) -> T:
        """Return the entry for ``name``, importing it first if it was registered lazily."""
        try:
            entry = self._entries[name]
        except KeyError:
            raise UnknownEntryError(self._unknown_message(name)) from None
        if isinstance(entry, str) and ":" in entry:
            module_name, _, attribute = entry.partition(":")
            try:
                module = importlib.import_module(module_name)
            except ImportError as error:
                raise ImportError(
                    f"{self.kind} {name!r} needs {module_name!r}, which cannot be imported "
                    f"({error}). Install the optional dependencies it needs "
                    "(see docs/evaluating-models.md)."
                ) from error
            entry = getattr(module, attribute)
            self._entries[name] = entry
        return entry  # type: ignore[return-value]

    def _unknown_message(self, name: str) -> str:
        close = difflib.get_close_matches(str(name), self._entries, n=3)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        known = ", ".join(sorted(self._entries)) if len(self._entries) <= 40 else None
        listing = f" Known: {known}." if known else f" {len(self._entries)} are registered."
        source = f" in {self.where}" if self.where else ""
        return f"unknown {self.kind} {name!r}{source}{hint}{listing}"

    def names(self) -> list[str]:
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
