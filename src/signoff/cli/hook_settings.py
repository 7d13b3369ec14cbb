"""``signoff hook install`` and ``signoff hook uninstall``: signoff's entries in a coding agent's
settings file — Claude Code's ``.claude/settings.json`` (``PreToolUse`` and ``PostToolUse``),
Gemini CLI's ``.gemini/settings.json`` (``BeforeTool`` and ``AfterTool``) — in the project, or
the user's own. Every other setting and hook stays as it was; installing again replaces
signoff's entries; a file that is not JSON is refused with its line and column, and nothing is
written; the new file takes the old one's place whole (written beside it, then renamed).

With ``--server``, Claude Code calls the server itself (an HTTP hook with the token from
``SIGNOFF_TOKEN``, blocking the call if the server cannot answer); otherwise, and always for
Gemini CLI, the agent runs ``signoff hook AGENT`` with the same server or configuration.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from signoff.cli.listen import stop

__all__ = ["install", "uninstall"]

_EVENTS = {
    "claude-code": ("PreToolUse", "PostToolUse", "PostToolUseFailure"),
    "gemini-cli": ("BeforeTool", "AfterTool"),
}
_ALIASES = {"gemini": "gemini-cli"}
_FOLDER = {"claude-code": ".claude", "gemini-cli": ".gemini"}
_MARK = "/v1/hooks/"
_GRACE = 30
"""Seconds the agent's timeout for the hook is above signoff's wait for a decision."""

Agent = Annotated[str, typer.Argument(help="claude-code or gemini.", show_default=False)]
User = Annotated[bool, typer.Option("--user", help="In your own settings (~/), not the project's.")]
Project = Annotated[
    Path,
    typer.Option(help="The project folder (its settings file is under it).", show_default=False),
]


def install(
    agent: Agent,
    user: User = False,
    project: Project = Path("."),
    server: Annotated[
        str | None,
        typer.Option(
            help="The signoff server to ask (else: the command hook, which finds one "
            "as `signoff hook AGENT` does).",
            show_default=False,
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            help="For the command hook with no server: the policy file it judges by.",
            show_default=False,
        ),
    ] = None,
    wait: Annotated[
        float,
        typer.Option(
            help="Seconds a held call waits for a person (a server waits its "
            "config's hooks.wait; for Gemini CLI, at most this): the agent's timeout is 30 s "
            "above it."
        ),
    ] = 300.0,
    command: Annotated[
        bool,
        typer.Option(
            "--command",
            help="Claude Code runs the command hook even with a "
            "server (the HTTP hook is the default there).",
        ),
    ] = False,
) -> None:
    """Write signoff's hook into a coding agent's settings."""
    agent = _ALIASES.get(agent, agent)
    path = _settings_path(agent, user, project)
    settings = _read(path)
    entries = _entries(agent, server, config, wait, http=not command)
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        stop("hook install", f"{path}: its 'hooks' is not an object; nothing was written", code=1)
    for event in _EVENTS[agent]:
        if not isinstance(hooks.get(event, []), list):
            stop("hook install", f"{path}: its hooks.{event} is not a list; nothing was written",
                 code=1)  # fmt: skip
    for event, entry in zip(_EVENTS[agent], entries, strict=True):
        kept = [group for group in hooks.get(event, []) if not _ours(group)]
        hooks[event] = [*kept, {"matcher": "*" if agent == "claude-code" else "", "hooks": [entry]}]
    _write(path, settings)
    typer.echo(f"signoff hook install: {agent} asks signoff before each tool call ({path})")


def uninstall(agent: Agent, user: User = False, project: Project = Path(".")) -> None:
    """Remove signoff's hook from a coding agent's settings."""
    agent = _ALIASES.get(agent, agent)
    path = _settings_path(agent, user, project)
    if not path.exists():
        typer.echo(f"signoff hook uninstall: {path} does not exist; nothing to remove")
        return
    settings = _read(path)
    hooks = settings.get("hooks")
    removed = 0
    if isinstance(hooks, dict):
        for event in _EVENTS[agent]:
            groups = hooks.get(event)
            if isinstance(groups, list):
                kept = [group for group in groups if not _ours(group)]
                removed += len(groups) - len(kept)
                if kept:
                    hooks[event] = kept
                else:
                    del hooks[event]
        if not hooks:
            del settings["hooks"]
    _write(path, settings)
    typer.echo(f"signoff hook uninstall: {removed} signoff hook entries removed from {path}")


def _settings_path(agent: str, user: bool, project: Path) -> Path:
    if agent not in _EVENTS:
        stop("hook", f"no hook for {agent!r}: one of {sorted(_EVENTS)}", code=2)
    folder = Path.home() if user else project
    return folder / _FOLDER[agent] / "settings.json"


def _entries(
    agent: str, server: str | None, config: Path | None, wait: float, *, http: bool
) -> list[Any]:
    """Signoff's hook entry for each of the agent's events."""
    if agent == "claude-code" and server and http:
        hook = {
            "type": "http",
            "url": f"{server.rstrip('/')}{_MARK}claude-code?wait={wait:g}",
            "headers": {"Authorization": "Bearer $SIGNOFF_TOKEN"},
            "allowedEnvVars": ["SIGNOFF_TOKEN"],
            "timeout": int(wait) + _GRACE,
            "onFailure": "block",
        }
        return [hook] * len(_EVENTS[agent])
    command = [*_program(), "hook", agent]
    if server:  # the server waits no longer than the agent waits for the hook
        command += ["--server", server, "--wait", f"{wait:g}"]
    elif config is not None:
        command += ["--config", str(config.resolve()), "--wait", f"{wait:g}"]
    if agent == "claude-code":
        # A hook that cannot start or dies blocks the call, as one that answers no does.
        entry: dict[str, Any] = {"type": "command", "command": shlex.join(command),
                                 "timeout": int(wait) + _GRACE, "onFailure": "block"}  # fmt: skip
    else:  # Gemini CLI counts milliseconds, and names its hooks
        entry = {"type": "command", "name": "signoff", "command": shlex.join(command),
                 "timeout": (int(wait) + _GRACE) * 1000}  # fmt: skip
    return [entry] * len(_EVENTS[agent])


def _program() -> list[str]:
    """How the agent runs this signoff: its own program's path, whatever the agent's PATH."""
    found = shutil.which("signoff")
    if found and Path(found).resolve() == Path(sys.argv[0]).resolve():
        return [found]
    here = Path(sys.argv[0])
    if here.name == "signoff" and here.exists():
        return [str(here.resolve())]
    return [sys.executable, "-m", "signoff"]


def _ours(group: Any) -> bool:
    """Whether a settings file's hook group is signoff's (installed by this command)."""
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        return False
    for hook in group["hooks"]:
        if not isinstance(hook, dict):
            continue
        command = str(hook.get("command", ""))
        if _MARK in str(hook.get("url", "")) or ("signoff" in command and " hook " in command):
            return True
    return False


def _read(path: Path) -> dict[str, Any]:
    """The settings in `path` (none yet: empty); stop with where a broken one is broken."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        stop("hook", f"cannot read {path}: {exc}", code=1)
    try:
        settings = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        stop("hook", f"{path}:{exc.lineno}:{exc.colno}: not JSON ({exc.msg}); nothing was "
             "written", code=1)  # fmt: skip
    if not isinstance(settings, dict):
        stop("hook", f"{path}: the settings are not a JSON object; nothing was written", code=1)
    return settings


def _write(path: Path, settings: dict[str, Any]) -> None:
    """Replace `path` (the file a link there points to) with `settings` whole: written beside
    it with its mode, flushed to disk, then renamed over it."""
    path = path.resolve() if path.is_symlink() else path
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".settings.", suffix=".json")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(settings, file, indent=2)
            file.write("\n")
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
