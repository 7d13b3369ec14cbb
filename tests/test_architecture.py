"""The house's plan, kept: floors, no circles, rooms of a readable size (docs/architecture.md §2).

The source is read, not imported: every ``import`` counts — at module level, inside a function and
under ``if TYPE_CHECKING`` — because each is an arrow a reader has to follow. A module may import
from its own floor or below; the modules of the package form no circle; integrations reach state
only through the gate; no module is over 500 lines and no function over 80 (a function's length
counts its decorators and all that is nested in it).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src"

# The floors, lowest first. A module is on the floor of the longest name here that is its own or
# a package above it.
FLOORS: dict[str, int] = {
    # 0 words: the vocabulary every floor speaks, and the instruments that observe them all.
    "signoff.types": 0,
    "signoff.errors": 0,
    "signoff.names": 0,
    "signoff.limits": 0,
    "signoff.redaction": 0,
    "signoff._lazy": 0,
    "signoff._moved": 0,
    "signoff.telemetry": 0,
    # 1 rules: pure and synchronous.
    "signoff.policy": 1,
    # 2 memory: the store protocol and its databases.
    "signoff.store": 2,
    # 3 the heart: judge, hold, decide, resume, execute once.
    "signoff.gate": 3,
    # 4 what runs on the heart: signoff's own agents, insights, notices, other apps' channels.
    "signoff.agent": 4,
    "signoff.insights": 4,
    "signoff.notify": 4,
    "signoff.channels": 4,
    # 5 adapters: frameworks, wire protocols, and the server's parts (auth, service, shapes, …).
    "signoff.integrations": 5,
    "signoff.protocols": 5,
    "signoff.prometheus": 5,
    "signoff.server": 5,
    # 6 composition: the app that assembles the server's rooms, the CLI, the demo, the package.
    "signoff.server.app": 6,
    "signoff.server.routes": 6,
    "signoff.cli": 6,
    "signoff.demo": 6,
    "signoff.examples": 6,
    "signoff.testing": 6,
    "signoff.__main__": 6,
    "signoff": 6,
}

# Arrows no floor may draw, whatever the floors say.
FORBIDDEN: list[tuple[str, str, str]] = [
    (
        "signoff.integrations",
        "signoff.store",
        "integrations reach state through the gate's ExternalRuns",
    ),
]

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80

# What the last redrawing did not reach yet, with its size then: each may shrink, none may grow,
# and nothing may join the list. Empty is the goal.
OVERSIZED_MODULES: dict[str, int] = {}
OVERSIZED_FUNCTIONS: dict[str, int] = {}


@dataclass(frozen=True)
class Arrow:
    source: str
    target: str
    line: int


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted((SOURCE / "signoff").rglob("*.py")):
        parts = path.relative_to(SOURCE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _known(name: str) -> str | None:
    """The module an imported name lives in: itself, or the nearest package or module above it."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _targets(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".")
            if path.name != "__init__.py":
                package = package[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join([*package, *([node.module] if node.module else [])])
        # `from package import module` names the module; `from module import name`, the module.
        names = [
            f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
            for alias in node.names
        ]
    for name in names:
        if name.startswith("signoff") and (target := _known(name)) is not None:
            yield target


def _arrows() -> list[Arrow]:
    arrows: set[Arrow] = set()
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _targets(module, path, node):
                    # A package's own modules importing the package (its __init__) is not an arrow
                    # between rooms; the package importing its modules is.
                    if target != module and not module.startswith(f"{target}."):
                        arrows.add(Arrow(module, target, node.lineno))
    return sorted(arrows, key=lambda a: (a.source, a.line, a.target))


ARROWS = _arrows()


def _floor(module: str) -> int:
    name = module
    while name not in FLOORS:
        name = name.rpartition(".")[0]
        assert name, f"{module} is on no floor: add its package to FLOORS in this test"
    return FLOORS[name]


def _where(arrow: Arrow) -> str:
    path = MODULES[arrow.source].relative_to(SOURCE)
    return f"{path}:{arrow.line}: {arrow.source} imports {arrow.target}"


def test_every_arrow_points_to_its_own_floor_or_below() -> None:
    upward = [
        f"{_where(a)} (floor {_floor(a.source)} → {_floor(a.target)})"
        for a in ARROWS
        # A package's face (its __init__) shows what its modules define: that is no arrow up.
        if _floor(a.target) > _floor(a.source) and not a.target.startswith(f"{a.source}.")
    ]
    assert not upward, "arrows back up a floor:\n" + "\n".join(upward)


@pytest.mark.parametrize(("source", "target", "why"), FORBIDDEN)
def test_forbidden_arrows(source: str, target: str, why: str) -> None:
    crossing = [
        _where(a)
        for a in ARROWS
        if (a.source == source or a.source.startswith(f"{source}."))
        and (a.target == target or a.target.startswith(f"{target}."))
    ]
    assert not crossing, f"{why}:\n" + "\n".join(crossing)


def _circles(arrows: list[Arrow]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    graph: dict[str, set[str]] = {}
    for arrow in arrows:
        graph.setdefault(arrow.source, set()).add(arrow.target)
        graph.setdefault(arrow.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))
    return circles


def test_no_import_circles() -> None:
    circles = _circles(ARROWS)
    shown = []
    for circle in circles:
        members = set(circle)
        shown.append(" ⇄ ".join(circle))
        shown.extend(
            f"    {_where(a)}" for a in ARROWS if a.source in members and a.target in members
        )
    assert not circles, "import circles:\n" + "\n".join(shown)


def test_the_reader_sees_arrows_and_circles() -> None:
    """The rules above are not vacuous: the reader finds the arrows the code draws, and a circle."""
    gate_to_store = [
        a
        for a in ARROWS
        if a.source.startswith("signoff.gate") and a.target.startswith("signoff.store")
    ]
    assert gate_to_store, "the gate uses the store protocol: the reader missed its imports"
    drawn = [Arrow("a", "b", 1), Arrow("b", "c", 1), Arrow("c", "a", 1), Arrow("c", "d", 1)]
    assert _circles(drawn) == [["a", "b", "c"]]
    assert _circles(drawn[1:]) == []
    assert _floor("signoff.server.app") > _floor("signoff.server.auth") > _floor("signoff.gate.x")


def _sizes() -> tuple[dict[str, int], dict[str, int]]:
    modules: dict[str, int] = {}
    functions: dict[str, int] = {}
    for module, path in MODULES.items():
        text = path.read_text(encoding="utf-8")
        modules[module] = len(text.splitlines())
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
                assert node.end_lineno is not None
                name = f"{module}:{node.name}:{node.lineno}"
                functions[name] = node.end_lineno - first + 1
    return modules, functions


def test_rooms_of_a_readable_size() -> None:
    modules, functions = _sizes()
    problems = []
    for module, lines in sorted(modules.items()):
        allowed = OVERSIZED_MODULES.get(module, MAX_MODULE_LINES)
        if lines > allowed:
            problems.append(
                f"{MODULES[module].relative_to(SOURCE)}: {lines} lines (at most {allowed})"
            )
    for name, lines in sorted(functions.items()):
        module, function, _ = name.split(":")
        allowed = OVERSIZED_FUNCTIONS.get(f"{module}:{function}", MAX_FUNCTION_LINES)
        if lines > allowed:
            problems.append(f"{name}: function {function} is {lines} lines (at most {allowed})")
    assert not problems, "cut these by responsibility:\n" + "\n".join(problems)


def test_the_list_of_exceptions_only_shrinks() -> None:
    """An entry whose module or function is back within the caps leaves the list."""
    modules, functions = _sizes()
    longest: dict[str, int] = {}
    for name, lines in functions.items():
        module, function, _ = name.split(":")
        key = f"{module}:{function}"
        longest[key] = max(longest.get(key, 0), lines)
    stale = [m for m in OVERSIZED_MODULES if modules.get(m, 0) <= MAX_MODULE_LINES]
    stale += [f for f in OVERSIZED_FUNCTIONS if longest.get(f, 0) <= MAX_FUNCTION_LINES]
    assert not stale, f"within the caps now; remove from the lists: {stale}"


def test_the_map_in_the_docs_draws_these_floors() -> None:
    """docs/architecture.md §2's table of floors says what FLOORS says, package by package."""
    text = (SOURCE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    drawn: dict[str, int] = {}
    for row in re.findall(r"^\| (\d) \|[^|]*\|(.*)\|$", text, flags=re.MULTILINE):
        floor, packages = int(row[0]), row[1]
        for name in re.findall(r"`([\w.]+)`", packages):
            drawn["signoff" if name == "signoff" else f"signoff.{name}"] = floor
    assert len(drawn) >= 20, "the table of floors is missing from docs/architecture.md"
    assert {name: _floor(name) for name in drawn} == drawn
