"""The code version of an asset: a sha256 over the code its function runs.

What :func:`code_version` covers, for a function ``fn`` (of the package, or of another module
that defines an asset added to the graph):

- ``fn``'s own definition (its signature and body as written, not its decorators) and the
  definitions of the functions, classes and module-level values (assignments) of its own module
  that it names, transitively;
- every ``cultivar_assets`` module that those definitions reach: a module they name, the module
  a function or class they name is defined in, a module their function-level ``import`` /
  ``from … import`` statements name; then, closed over, every module that a reached module
  imports (module-level and function-level imports alike, absolute and relative, each with its
  parent packages' ``__init__``), each module by its name and source bytes;
- the package data those modules read: every ``sql/*.sql`` file (and ``sql/migrations/``) when
  :mod:`cultivar_assets.sqlfiles` is reached; every file of the ``site/`` folder (templates,
  static files) when a module of :mod:`cultivar_assets.site` is reached; a file or folder beside
  a reached module whose name the module's source holds as a quoted string (``locales.csv``,
  ``prompt_styles.yaml``, ``demo/``; not a package folder), except :data:`READ_AS_SOURCES`
  (files that settings name and the pipeline observes as source assets: the model registry,
  the demo localiser's recorded answers, the demo's returned annotation and error-annotation
  files).

Not covered: third-party packages (their versions are the environment's, not the code's) and
the settings (observed as source assets). Each module's digest and each asset's version are
computed once per process (:func:`clear_cache` forgets them).
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from cultivar_assets.paths import resource_dir

PACKAGE = "cultivar_assets"
PACKAGE_DIR = Path(__file__).resolve().parents[1]
# package data that settings name and the pipeline observes as source assets (relative to the
# package): the bundled registry, the demo localiser's recorded answers, the demo's returned
# annotation and error-annotation files
READ_AS_SOURCES = ("models.yaml", "construction/demo_localiser_answers.json",
                   "data/demo/annotations", "data/demo/errors")
_SKIPPED_DIRS = {"__pycache__", "node_modules"}


def read_bytes(path: Path) -> bytes:
    """The bytes of one source or data file (the one place this module reads files)."""
    return path.read_bytes()


def _read_as_source(path: Path, root: Path) -> bool:
    """Whether ``path`` is (below) one of :data:`READ_AS_SOURCES`."""
    if not path.is_relative_to(root):
        return False
    relative = path.relative_to(root).as_posix()
    return any(relative == entry or relative.startswith(f"{entry}/")
               for entry in READ_AS_SOURCES)


def module_file(name: str, root: Path = PACKAGE_DIR) -> Path | None:
    """The source file of the package's module ``name`` (``a.b`` -> ``a/b.py`` or
    ``a/b/__init__.py`` below ``root``); None for a name outside the package or no module."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    base = root.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py") if len(parts) > 1 else None,
                      base / "__init__.py"):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def _with_parents(name: str) -> Iterator[str]:
    parts = name.split(".")
    for end in range(1, len(parts) + 1):
        yield ".".join(parts[:end])


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name of a (possibly relative) ``from`` import's module."""
    if level == 0:
        return target or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join([*base, target] if target else base)


def _imports(nodes: Iterable[ast.AST], module: str, is_package: bool,
             root: Path) -> set[str]:
    """The package's modules that the import statements among ``nodes`` (walked) name."""
    found: set[str] = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Import):
                names = [alias.name for alias in sub.names]
            elif isinstance(sub, ast.ImportFrom):
                base = _resolve(module, is_package, sub.level, sub.module)
                names = [base, *(f"{base}.{alias.name}" for alias in sub.names)]
            else:
                continue
            for name in names:
                if module_file(name, root) is not None:
                    found.update(n for n in _with_parents(name) if module_file(n, root))
    return found


@dataclass(frozen=True)
class _Module:
    name: str
    path: Path
    digest: bytes          # sha256 of the source bytes
    imports: frozenset[str]
    data: tuple[Path, ...]  # package data beside it that its source names


_FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)",
                          re.MULTILINE)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w. \t,]+)", re.MULTILINE)


def _text_imports(text: str, module: str, is_package: bool, root: Path) -> set[str]:
    """The package's modules that the import statements of a module's source name (found line
    by line: module-level and function-level alike; faster than parsing every module)."""
    names: list[str] = []
    for match in _IMPORT.finditer(text):
        names += [part.split(" as ")[0].strip() for part in match.group(1).split(",")]
    for match in _FROM_IMPORT.finditer(text):
        dots = len(match.group(1)) - len(match.group(1).lstrip("."))
        base = _resolve(module, is_package, dots, match.group(1)[dots:] or None)
        names.append(base)
        for part in match.group(2).strip("()").replace("\\", " ").split(","):
            alias = part.split(" as ")[0].strip()
            if alias:
                names.append(f"{base}.{alias}")
    return {parent for name in names if name.startswith(PACKAGE) and module_file(name, root)
            for parent in _with_parents(name) if module_file(parent, root)}


@cache
def _module(name: str, root: Path = PACKAGE_DIR) -> _Module:
    path = module_file(name, root)
    if path is None:
        raise LookupError(f"{name}: no module of {PACKAGE} below {root}")
    source = read_bytes(path)
    text = source.decode("utf-8")
    data = tuple(sorted(
        entry for entry in path.parent.iterdir()
        if (f'"{entry.name}"' in text or f"'{entry.name}'" in text)
        and not _read_as_source(entry, root)
        and entry.suffix not in (".py", ".pyc") and entry.name not in _SKIPPED_DIRS
        and not (entry / "__init__.py").exists()))  # a package is code, not data
    imports = _text_imports(text, name, path.name == "__init__.py", root) - {name}
    return _Module(name, path, hashlib.sha256(source).digest(), frozenset(imports), data)


def module_closure(names: Iterable[str], root: Path = PACKAGE_DIR) -> set[str]:
    """``names`` and every package module they import, transitively (module docstring)."""
    seen: set[str] = set()
    todo = [n for name in names for n in _with_parents(name) if module_file(n, root)]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(_module(name, root).imports - seen)
    return seen


def _files_below(folder: Path) -> Iterator[Path]:
    if folder.is_file():
        yield folder
        return
    for base, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        for name in sorted(names):
            if not name.endswith((".pyc", ".pyo")):
                yield Path(base) / name


def _data_files(modules: set[str], root: Path) -> list[tuple[str, Path]]:
    """(label, file) of the package data the ``modules`` read (module docstring)."""
    folders: list[tuple[str, Path]] = []
    if f"{PACKAGE}.sqlfiles" in modules:
        folders.append(("sql", resource_dir("sql")))
    if any(m == f"{PACKAGE}.site" or m.startswith(f"{PACKAGE}.site.") for m in modules):
        folders.append(("site", resource_dir("site")))
    for name in sorted(modules):
        for entry in _module(name, root).data:
            folders.append((entry.relative_to(root).as_posix(), entry))
    files: list[tuple[str, Path]] = []
    for label, folder in folders:
        for path in _files_below(folder):
            if _read_as_source(path, root):
                continue
            rel = path.relative_to(folder).as_posix() if folder.is_dir() else ""
            files.append((f"{label}/{rel}" if rel else label, path))
    return files


@cache
def _file_digest(path: Path) -> bytes:
    return hashlib.sha256(read_bytes(path)).digest()


@cache
def _parsed(path: Path) -> tuple[str, ast.Module]:
    source = read_bytes(path).decode("utf-8")
    return source, ast.parse(source, filename=str(path))


def _definition_names(fn: Callable) -> tuple[set[str], set[str], list[str]]:
    """For ``fn`` (unwrapped): the package modules its definition and the same-module
    definitions it names reach, the function-level imports among them, and their source texts."""
    module = inspect.getmodule(fn)
    if module is None or inspect.getsourcefile(fn) is None:
        raise LookupError(f"{fn!r}: no module source to take its code version from")
    source, tree = _parsed(Path(inspect.getsourcefile(fn)))
    definitions: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):  # module-level values (constants)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name):
                        definitions[sub.id] = node
    definitions.update({node.name: node for node in tree.body if isinstance(
        node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)})
    if not isinstance(definitions.get(fn.__name__), ast.FunctionDef | ast.AsyncFunctionDef):
        raise LookupError(f"{module.__name__}: no top-level definition named {fn.__name__}")
    reached: set[str] = set()
    texts: list[str] = []
    todo, seen = [fn.__name__], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        node = definitions[name]
        parts: list[ast.AST]
        if isinstance(node, ast.Assign | ast.AnnAssign):
            parts = [node.value] if node.value is not None else []
        elif isinstance(node, ast.ClassDef):
            parts = [*node.body, *node.bases]
        else:
            parts = [*node.body, node.args, *([node.returns] if node.returns else [])]
        text = ast.get_source_segment(source, node) or ""  # from ``def``/``class``/the target
        if text not in texts:
            texts.append(text)
        is_package = Path(module.__file__).name == "__init__.py"
        reached |= _imports(parts, module.__name__, is_package, PACKAGE_DIR)
        for part in parts:
            for sub in ast.walk(part):
                if not isinstance(sub, ast.Name):
                    continue
                if sub.id in definitions and sub.id not in seen:
                    todo.append(sub.id)
                    continue
                value = vars(module).get(sub.id)
                origin = (value.__name__ if inspect.ismodule(value)
                          else getattr(value, "__module__", None)
                          if inspect.isfunction(value) or inspect.isclass(value) else None)
                if origin is None and value is not None:
                    origin = _imported_from(tree, sub.id, module.__name__, is_package)
                if origin and module_file(origin) is not None:
                    reached.add(origin)
    return reached, seen, texts


def _imported_from(tree: ast.Module, name: str, module: str, is_package: bool) -> str | None:
    """The module a module-level ``from … import`` of ``tree`` takes ``name`` from."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return _resolve(module, is_package, node.level, node.module)
    return None


def reached_modules(fn: Callable) -> set[str]:
    """The package modules that ``fn`` (or what it wraps) reaches (module docstring)."""
    reached, _, _ = _definition_names(inspect.unwrap(fn))
    return module_closure(reached)


@cache
def _code_version(fn: Callable) -> str:
    reached, _, texts = _definition_names(fn)
    modules = module_closure(reached)
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8") + b"\0")
    for name in sorted(modules):
        digest.update(f"module {name}\0".encode())
        digest.update(_module(name).digest)
    for label, path in _data_files(modules, PACKAGE_DIR):
        digest.update(f"data {label}\0".encode())
        digest.update(_file_digest(path))
    return digest.hexdigest()


def code_version(fn: Callable) -> str:
    """The code version of ``fn`` (or of the function it wraps): module docstring."""
    return _code_version(inspect.unwrap(fn))


def clear_cache() -> None:
    """Forget every digest computed in this process (the files are read again)."""
    _module.cache_clear()
    _file_digest.cache_clear()
    _parsed.cache_clear()
    _code_version.cache_clear()
