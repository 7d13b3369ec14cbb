"""Reading policy text, and finding the line and column of a path in it when something is wrong.

Parsing keeps no positions: a policy of 10,000 rules loads at full speed, and only when a problem
is reported is the text composed again to find where that path stands.
"""

from __future__ import annotations

import contextlib
import gc
import json
import pathlib
import re
from collections.abc import Hashable, Iterator
from typing import Any, TypeAlias

import yaml

from signoff.errors import PolicyError, Problem
from signoff.limits import text_depth

__all__ = ["Locator", "Path", "format_path", "parse_text", "paused_gc"]

Path: TypeAlias = tuple[Any, ...]
"""Keys and indexes from the document's root; a key can be any YAML scalar."""

_PLAIN_KEY = re.compile(r"[^.\[\] \"']+")
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


MAX_NESTING = 100
"""Levels a policy or config document may nest: past this, readers recurse too deep (YAML's C
reader crashes the process)."""


class _StrictLoader(_Loader):  # type: ignore[valid-type,misc]
    """A safe loader that refuses duplicate keys instead of keeping the last one."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Hashable, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *anchor` merges are fine; explicit keys may override them
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, Hashable) and key in seen:
                first = seen[key].start_mark
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first defined on line {first.line + 1})",
                    key_node.start_mark,
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many objects that all stay alive.

    Loading 10,000 rules allocates several hundred thousand objects and none of them is garbage;
    without this, the collector scans them again and again and loading takes twice as long.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def parse_text(text: str, *, source: str | None, json_only: bool = False) -> Any:
    """Parse YAML (JSON is YAML too); raise `PolicyError` pointing at a syntax error."""
    if json_only:
        try:
            return json.loads(text, object_pairs_hook=_unique_pairs)
        except json.JSONDecodeError as exc:
            problem = Problem(message=exc.msg, source=source, line=exc.lineno, column=exc.colno)
            raise PolicyError([problem]) from None
        except (_DuplicateKey, RecursionError):
            pass  # JSON is YAML: the YAML reader below finds where the problem stands
    try:
        _check_nesting(text, source)
        with paused_gc():
            return yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        message = " ".join(filter(None, [exc.context, exc.problem])) or str(exc)
        problem = Problem(
            message=message,
            source=source,
            line=mark.line + 1 if mark else None,
            column=mark.column + 1 if mark else None,
        )
        raise PolicyError([problem]) from None
    except yaml.YAMLError as exc:
        raise PolicyError([Problem(message=str(exc), source=source)]) from None


def read_file(path: pathlib.Path, what: str) -> tuple[str, Any]:
    """The text of the YAML file at `path` (JSON when it is named ``.json``) and what it holds;
    a `PolicyError` naming the file when it cannot be read or parsed. `what` is what the file
    should hold, as the message says it (``the policy``)."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problem = Problem(message=f"cannot read {what}: {exc}", source=source)
        raise PolicyError([problem]) from None
    return text, parse_text(text, source=source, json_only=path.suffix == ".json")


def _check_nesting(text: str, source: str | None) -> None:
    """Refuse a document nested past `MAX_NESTING`, at the line and column where it goes past:
    read as a flat stream of events (which nothing recurses over) when a quick look says it
    might be that deep."""
    if not _maybe_deep(text):
        return
    depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_NESTING:
                mark = event.start_mark
                problem = Problem(
                    message=f"the document is nested more than {MAX_NESTING} levels deep",
                    source=source,
                    line=None if mark is None else mark.line + 1,
                    column=None if mark is None else mark.column + 1,
                )
                raise PolicyError([problem])
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


# In block style a level needs a column of indentation, or an indicator on its line (``- ``,
# ``? ``, a key's ``: ``, two levels for ``- key:``): 100 levels need one or the other in bulk.
_DEEP_INDENT = re.compile(rf"^[ \t]{{{MAX_NESTING // 2 - 2}}}", re.MULTILINE)
_DASHES = re.compile(rf"[-?:][ \t]+(?:[-?:][ \t]+){{{MAX_NESTING // 4 - 1}}}")


def _maybe_deep(text: str) -> bool:
    """Whether `text` might nest past `MAX_NESTING` (then `_check_nesting` reads its events,
    which is exact): its brackets outside double-quoted scalars, counted from where they would
    stand in flow style; deep indentation; or a run of block indicators on one line
    (``- - - x``). A cheap look, not a parse: closing brackets inside single-quoted scalars
    can hide nesting from it, which only a file's author can write (the API takes policies as
    JSON, whose strings it sees)."""
    if text.count("[") + text.count("{") > MAX_NESTING and (
        text_depth(text.encode(), stop_after=MAX_NESTING) > MAX_NESTING
    ):
        return True
    return _DEEP_INDENT.search(text) is not None or _DASHES.search(text) is not None


class _DuplicateKey(ValueError):
    pass


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) != len(pairs):
        raise _DuplicateKey
    return data


class Locator:
    """Finds the line and column of paths in one text, composing it once."""

    def __init__(self, text: str) -> None:
        try:
            self._root: yaml.Node | None = yaml.compose(text, Loader=_Loader)
        except yaml.YAMLError:
            self._root = None

    def __call__(self, path: Path, *, at_key: bool = False) -> tuple[int, int] | None:
        """The 1-based line and column of the value at `path` (or of its key, with `at_key`);
        the nearest enclosing node when the path is not all there."""
        node = found = self._root
        last = len(path) - 1
        for index, step in enumerate(path):
            found = None
            if isinstance(node, yaml.MappingNode):
                for key_node, value_node in node.value:
                    if isinstance(key_node, yaml.ScalarNode) and _same_key(key_node, step):
                        found = key_node if at_key and index == last else value_node
                        break
            elif (
                isinstance(node, yaml.SequenceNode)
                and isinstance(step, int)
                and step < len(node.value)
            ):
                found = node.value[step]
            if found is None:
                break
            node = found
        target = found or node
        if target is None:
            return None
        return target.start_mark.line + 1, target.start_mark.column + 1


def _same_key(node: yaml.ScalarNode, step: object) -> bool:
    if isinstance(step, str):
        return bool(node.value == step) and node.tag == "tag:yaml.org,2002:str"
    # A key YAML resolved to a boolean, a number or null: compare what it resolves to.
    try:
        value = yaml.load(node.value, Loader=_Loader)
    except yaml.YAMLError:
        return False
    return bool(value == step and type(value) is type(step))


def format_path(path: Path) -> str:
    """``rules[2].when.path`` for ``("rules", 2, "when", "path")``."""
    out = ""
    for step in path:
        if isinstance(step, int) and not isinstance(step, bool):
            out += f"[{step}]"
        elif not isinstance(step, str) or _PLAIN_KEY.fullmatch(step) is None:
            out += f"[{json.dumps(step, ensure_ascii=False, default=repr)}]"
        else:
            out += f".{step}" if out else step
    return out
