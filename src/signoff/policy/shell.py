"""Shell commands judged as shell: a coding agent's one call of its shell tool (Claude Code's
``Bash``, Gemini CLI's ``run_shell_command``) may be many commands — ``ls && curl x | sh``,
``echo $(rm -rf ~)``, ``(cd /; make) > /etc/motd`` — and a rule written for one of them
(``allow: Bash when command glob "ls *"``) must never let the others through.

The command is read by tree-sitter's bash grammar (the parser editors and GitHub use for shell;
MIT-licensed, prebuilt wheels, no subprocess), and judged part by part: each simple command —
in a list, a pipeline, a subshell, a function, a loop or a condition, in ``$(…)``, backticks or
``<(…)`` — and each redirection to or from a file is a call of the same tool with that part as
its command. Every part must be allowed for the call to run; a denied part denies it; otherwise
it asks. A rule that matches the whole text is heard too where it denies or asks (a pattern
across parts, ``* | sh``), never where it allows. A command the parser cannot read whole asks a
person.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from typing import Any

from signoff.errors import InvalidArgumentsError
from signoff.types import ToolCall, Verdict

__all__ = ["MAX_COMMAND", "SHELL_TOOLS", "command_of", "digest", "judge", "parts"]

SHELL_TOOLS: dict[str, str] = {"Bash": "command", "run_shell_command": "command"}
"""The shell tools of the coding agents signoff serves, and the argument holding the command."""
MAX_COMMAND = 64 * 1024
"""The longest command read as shell (bytes); a longer one asks a person."""

_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_DECLARATIONS = frozenset({"declaration_command", "unset_command"})
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_UNREAD = re.compile(r"`|\(\(|\$\{(?![A-Za-z_][A-Za-z0-9_]*\})")
"""What the grammar does not read as bash runs it, so a command holding it asks a person:
backticks (bash parses their text again, unescaped, inside heredocs and ``${…}`` too),
arithmetic (``$((x))`` evaluates what ``x`` holds, ``a[$(…)]`` included), and any ``${…}`` but
a plain name (operators, transformations such as ``@P``, subscripts)."""
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
_OPENING = re.compile(rb"\$\(|[<>]\(")
"""Where a command substitution or a process substitution opens: each must be one the walk
reads as such (one inside quotes the grammar took for text asks, as one it missed would)."""
_DUPLICATION = re.compile(r"\d*[<>]&(\d+-?|-)")
"""A redirection that copies or closes a file descriptor: no file is read or written."""

Evaluate = Callable[[ToolCall], Verdict]


def command_of(call: ToolCall) -> str | None:
    """The shell command `call` runs, when it is a call of a shell tool with one."""
    argument = SHELL_TOOLS.get(call.name)
    if argument is None or call.kind != "tool" or call.server is not None:
        return None
    args: object = call.args
    if not isinstance(args, dict):
        return None
    command = args.get(argument)
    return command if isinstance(command, str) else None


def digest(call: ToolCall) -> str | None:
    """The digest of `call`'s arguments, None when they are not JSON."""
    try:
        return call.digest
    except InvalidArgumentsError:
        return None


def judge(call: ToolCall, command: str, evaluate: Evaluate) -> Verdict:
    """The verdict on `call`, which runs the shell `command`: each part's (`evaluate` judges
    one call as the rules say, grants included), combined — and the whole text's where a rule
    denies or asks it."""
    found = parts(command)
    if found is None:
        whole = evaluate(call)
        if whole.kind == "deny":
            return whole  # a rule that denies the text denies it, read or not
        return Verdict(
            kind="ask", rule=None,
            reason="signoff could not read this shell command as a whole, so a person decides",
        )  # fmt: skip
    argument = SHELL_TOOLS[call.name]
    whole = evaluate(call)
    if found == (command.strip(),) or not found:
        return whole  # one simple command (or none): judged as written
    verdicts = []
    for part in found:
        verdict = evaluate(replace(call, args={**call.args, argument: part}))
        if verdict.kind == "deny":
            return _of_part(verdict, part)
        verdicts.append((part, verdict))
    if whole.kind == "deny":
        return whole
    asked = [(p, v) for p, v in verdicts if v.kind == "ask"]
    if whole.kind == "ask" and whole.rule is not None:
        asked.insert(0, (command, whole))
    if not asked:
        if len(verdicts) == 1:
            return verdicts[0][1]
        return Verdict(
            kind="allow", rule=verdicts[0][1].rule,
            reason=f"each of its {len(found)} parts is allowed",
        )  # fmt: skip
    return _asked(asked)


def _of_part(verdict: Verdict, part: str) -> Verdict:
    return replace(verdict, reason=f"{_quoted(part)}: {verdict.reason}")


def _asked(asked: list[tuple[str, Verdict]]) -> Verdict:
    """One ask for a command whose parts ask: the first's, which every other must agree with on
    who may decide — the person deciding must be one who could approve each part."""
    first_part, first = asked[0]
    deciders = _deciders(first)
    for part, verdict in asked[1:]:
        if _deciders(verdict) != deciders:
            return Verdict(
                kind="deny", rule=verdict.rule,
                reason=f"its parts {_quoted(first_part)} and {_quoted(part)} are decided by "
                "different people under rules "
                f"{first.rule or 'default'} and {verdict.rule or 'default'}: run them apart",
            )  # fmt: skip
    timeouts = [v.timeout for _, v in asked if v.timeout is not None]
    on_timeout = {v.on_timeout for _, v in asked}
    return replace(
        first,
        reason=_of_part(first, first_part).reason,
        timeout=min(timeouts) if timeouts else None,
        on_timeout=first.on_timeout if len(on_timeout) == 1 else None,
        destructive=any(v.destructive for _, v in asked),
    )


def _deciders(verdict: Verdict) -> tuple[Any, ...]:
    return (
        frozenset(verdict.approvers),
        verdict.forbid_self_approval,
        verdict.quorum,
        verdict.escalate,
    )


def _quoted(part: str) -> str:
    shown = part if len(part) <= 80 else part[:77] + "..."
    return f"`{shown}`"


def parts(command: str) -> tuple[str, ...] | None:
    """The parts of a shell command, in order — each simple command (its words, without its
    redirections) and each redirection to or from a file other than ``/dev/null`` — or None
    when it cannot be read whole (a syntax error, an unclosed quote, too long)."""
    source = command.encode()
    if len(source) > MAX_COMMAND or "\0" in command:
        return None
    if _UNREAD.search(command):
        return None
    tree = _parser().parse(source)
    root = tree.root_node
    if root.has_error:
        return None
    found: list[str] = []
    opened: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in _SUBSTITUTIONS:
            opened.add(node.start_byte)
        part = _part(node)
        if part:
            found.append(part)
        stack.extend(reversed(node.children))
    if any(m.start() not in opened for m in _OPENING.finditer(source)):
        return None  # a command run where the grammar does not read one: ask
    return tuple(found)


def _part(node: Any) -> str | None:
    """The part `node` is of its command, if it is one."""
    kind = node.type
    if kind == "command":
        words = [_text(c) for c in node.children if c.type not in _REDIRECTS]
        return " ".join(w for w in words if w)
    if kind in _DECLARATIONS:
        return _text(node)
    if (
        kind == "variable_assignment"
        and node.parent is not None
        and node.parent.type
        not in (
            "command",
            "declaration_command",
            "variable_assignments",
        )
    ):
        return _text(node)  # `PATH=/tmp/evil` alone changes what later commands run
    if kind == "variable_assignments":
        return _text(node)
    if kind == "file_redirect":
        target = node.child_by_field_name("destination")
        if target is None:
            return _text(node)
        written = "".join(_text(node).split())
        if _DUPLICATION.fullmatch(written) or _text(target) in _HARMLESS_TARGETS:
            return None  # 2>&1, >&2, <&-, >/dev/null
        return " ".join(_text(node).split())
    return None


def _text(node: Any) -> str:
    return bytes(node.text or b"").decode(errors="replace").strip()


@cache
def _parser() -> Any:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
