"""What signoff's Claude Code hook adds to an allowed tool call: the real Claude Code CLI (the one
the Claude Agent SDK's wheel carries) run as ``claude -p`` without a hook, with signoff's HTTP
hook and with its command hook, in the same run.

Run it with ``make bench``. Everything is offline, on loopback: a scripted Messages API
(``tests/hooks/messages.py``) plays the model — a ``Bash`` call of ``echo run-N``, then the text
``Done.`` — and a ``signoff serve`` on a SQLite file answers the hooks, its policy allowing
``echo *`` (``default: deny``). One sample is one whole CLI run, from its start to its exit:
the CLI starting, two model turns, the hooks, the command run. Four projects, the same but for
their ``.claude/settings.json``:

- **no hook** (the peer): no settings; the call is allowed by Claude Code's own allow-list
  (``--allowedTools 'Bash(echo:*)'``, passed to every variant alike).
- **no-op HTTP hook** (the floor of any HTTP hook): the settings ``signoff hook install`` writes,
  pointed at a server in this process that answers ``allow`` at once without looking — what
  Claude Code itself spends on an HTTP hook.
- **HTTP hook**: ``signoff hook install claude-code --server URL`` — Claude Code posts its
  ``PreToolUse`` and ``PostToolUse`` events to ``/v1/hooks/claude-code`` (bearer token): the call
  judged, allowed and claimed in the ledger before, its result recorded after.
- **command hook**: the same with ``--command`` — Claude Code runs ``signoff hook claude-code
  --server URL`` for each event, a Python process each time that reads the event on stdin and
  posts it to the same server. Its start-up (the interpreter, signoff's imports, httpx) is part
  of what it costs, twice per tool call.

The variants take turns, round-robin, the order rotated each round, so drift of the machine falls
on all alike; `WARMUP` rounds are not counted. Every run is checked: the command ran (its output
is the tool result the model was sent) and the hook was asked (signoff's audit log grew; the
no-op server counted two requests). The added latency of a hook is its p50 minus the no-hook
p50; beside it, the median over the rounds of each run less the no-hook run of its round.
The model answers at once here; a real model's turns take seconds, so the ratios to the no-hook
run are an upper bound of what a person sees.

**The hook alone.** In each round the bench also sends the same two events itself, as Claude
Code would: posted to the server on a new connection (HTTP), and piped to the command hook's own
command line through ``sh -c`` (command). That is the hook's own share of a run; what is left of
the added latency is Claude Code's side (settings with hooks, running them, reading answers),
which the no-op HTTP hook measures on its own.

Nothing here is a test: the figures depend on the machine and its load, which
``bench/results/coding_agents.json`` records with them.
"""

from __future__ import annotations

import contextlib
import http.client
import importlib.util
import json
import operator
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

import httpx
from rich.table import Table

from _common import environment, ms, percentile, wide_console

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' scripted Messages API

from tests.hooks.messages import Messages, Turn, scripted_messages
from tests.hooks.rig import loopback

from signoff import __version__

ROUNDS: Final = 30
WARMUP: Final = 2
TOKEN: Final = "bench-token"
CONFIG: Final = """\
auth:
  tokens:
    - {principal: dev, token_env: SIGNOFF_TOKEN_DEV}
hooks: {wait: 10m}
default: deny
rules:
  - allow: Bash
    when: {command: {glob: "echo *"}}
"""
ALLOWED_TOOLS: Final = "Bash(echo:*)"
VARIANTS: Final = ("no hook", "no-op HTTP hook", "HTTP hook", "command hook")
SIGNOFF: Final = ("HTTP hook", "command hook")
"""The variants that ask signoff (the others are peers)."""
RESULTS: Final = Path(__file__).resolve().parent / "results" / "coding_agents.json"


@dataclass(frozen=True, kw_only=True)
class Figures:
    p50_ms: float
    p90_ms: float
    max_ms: float
    samples: int


def figures(seconds: list[float]) -> Figures:
    ordered = sorted(seconds)

    def rank(q: float) -> float:
        return round(percentile(ordered, q) * 1_000, 2)

    return Figures(p50_ms=rank(0.5), p90_ms=rank(0.9), max_ms=rank(1.0), samples=len(ordered))


def claude() -> str:
    """The Claude Code CLI in the Claude Agent SDK's wheel."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or spec.origin is None:
        raise SystemExit("the Claude Agent SDK is not installed: pip install 'signoff[claude]'")
    return str(Path(spec.origin).parent / "_bundled" / "claude")


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    """``signoff serve`` on a SQLite file in `folder`, for the block: its URL."""
    config = folder / "signoff.yaml"
    config.write_text(CONFIG + f"database: sqlite+aiosqlite:///{folder / 'signoff.db'}\n")
    server = subprocess.Popen(
        [sys.executable, "-m", "signoff", "serve", "--config", str(config), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "SIGNOFF_TOKEN_DEV": TOKEN},
    )  # fmt: skip
    assert server.stdout is not None
    try:
        first = server.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+", first)
        assert found, f"signoff serve did not start: {first}"
        # What it says later is read and dropped, so a full pipe never stops it.
        threading.Thread(target=server.stdout.read, daemon=True).start()
        yield found.group(0)
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
        server.stdout.close()


def project(folder: Path, variant: str, url: str, noop: str) -> Path:
    """A project folder; with a hook, its settings written by ``signoff hook install`` (the
    no-op hook's with the no-op server's URL)."""
    folder.mkdir()
    if variant != "no hook":
        server = noop if variant == "no-op HTTP hook" else url
        command = ["--command"] if variant == "command hook" else []
        subprocess.run(
            [sys.executable, "-m", "signoff", "hook", "install", "claude-code",
             "--project", str(folder), "--server", server, *command],
            check=True, capture_output=True,
        )  # fmt: skip
    return folder


@dataclass
class NoOp:
    """An HTTP hook server that allows every call at once, without looking."""

    url: str = ""
    requests: int = 0


@contextlib.contextmanager
def noop_hook() -> Iterator[NoOp]:
    """The no-op hook server on loopback (a thread of this process), for the block."""
    noop = NoOp()
    allow = {"hookEventName": "PreToolUse", "permissionDecision": "allow"}
    answer = json.dumps({"hookSpecificOutput": allow}).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # the headers and the body are two writes

        def log_message(self, *_: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            noop.requests += 1
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    with loopback(Handler) as url:
        noop.url = url
        yield noop


def cli_environment(home: Path) -> dict[str, str]:
    """Claude Code's environment: offline, a scratch home, signoff's token for the hook."""
    env = {
        "PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8",
        "ANTHROPIC_API_KEY": "sk-ant-offline", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1", "SIGNOFF_TOKEN": TOKEN,
    }  # fmt: skip
    if "PYTHONPATH" in os.environ:  # the command hook runs the signoff this bench runs
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def run_cli(cli: str, folder: Path, env: dict[str, str], api: Messages, n: int) -> float:
    """One ``claude -p`` run in `folder`, timed whole; checked: the command ran."""
    api.turns = [Turn(calls=[("Bash", {"command": f"echo run-{n}"})]), Turn(text="Done.")]
    api.requests.clear()
    start = time.perf_counter()
    done = subprocess.run(
        [cli, "-p", "do what the scripted model says", "--output-format", "json",
         "--allowedTools", ALLOWED_TOOLS],
        cwd=folder, env={**env, "ANTHROPIC_BASE_URL": api.url},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    told = api.results()
    assert told == [{"content": f"run-{n}", "is_error": False}], told
    return elapsed


def events(folder: Path, n: int) -> list[bytes]:
    """The ``PreToolUse`` and ``PostToolUse`` events of one call, as Claude Code sends them."""
    call = {
        "session_id": str(uuid.uuid4()), "transcript_path": str(folder / "transcript.jsonl"),
        "cwd": str(folder), "permission_mode": "default", "tool_name": "Bash",
        "tool_input": {"command": f"echo direct-{n}"}, "tool_use_id": f"toolu_{uuid.uuid4().hex}",
    }  # fmt: skip
    after = {"stdout": f"direct-{n}", "stderr": "", "interrupted": False, "isImage": False}
    return [
        json.dumps({**call, "hook_event_name": "PreToolUse"}).encode(),
        json.dumps({**call, "hook_event_name": "PostToolUse", "tool_response": after}).encode(),
    ]


def allowed(answer: bytes) -> bool:
    """Whether a ``PreToolUse`` answer lets the call run."""
    said = json.loads(answer).get("hookSpecificOutput", {})
    return bool(said.get("permissionDecision") == "allow")


def http_hook(url: str) -> Callable[[list[bytes]], None]:
    """The events posted as Claude Code's HTTP hook posts them, each on a new connection
    (``http.client``: next to nothing on the client's side)."""
    where = urlsplit(url)
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}

    def send(bodies: list[bytes]) -> None:
        for i, body in enumerate(bodies):
            connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=60)
            try:
                connection.request("POST", "/v1/hooks/claude-code", body=body, headers=headers)
                response = connection.getresponse()
                answer = response.read()
            finally:
                connection.close()
            assert response.status == 200, answer
            assert i > 0 or allowed(answer), answer

    return send


def command_hook(line: str, env: dict[str, str]) -> Callable[[list[bytes]], None]:
    """The events piped to the command hook's command line, as Claude Code runs it."""

    def send(bodies: list[bytes]) -> None:
        for i, body in enumerate(bodies):
            done = subprocess.run(["sh", "-c", line], input=body, env=env, capture_output=True,
                                  timeout=60, check=False)  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert i > 0 or allowed(done.stdout), done.stdout

    return send


def audit_length(signoff: httpx.Client) -> int:
    """How many entries signoff's audit log holds."""
    found: int = signoff.get("/v1/audit", params={"limit": 1}).json()["length"]
    return found


def hook_command(folder: Path) -> str:
    """The command line ``signoff hook install --command`` wrote for ``PreToolUse``."""
    settings = json.loads((folder / ".claude" / "settings.json").read_text())
    line: str = settings["hooks"]["PreToolUse"][-1]["hooks"][0]["command"]
    return line


def measure(
    cli: str, root: Path, url: str, noop: NoOp, api: Messages, signoff: httpx.Client
) -> tuple[dict[str, list[float]], list[float]]:
    """Every variant's runs and the hook alone, round-robin (see the module); and the load
    average (1 min) at each round."""
    folders = {variant: project(root / f"project-{i}", variant, url, noop.url)
               for i, variant in enumerate(VARIANTS)}  # fmt: skip
    env = cli_environment(root / "home")
    (root / "home").mkdir()
    alone = {
        "HTTP hook alone": http_hook(url),
        "command hook alone": command_hook(hook_command(folders["command hook"]), env),
    }
    samples: dict[str, list[float]] = {name: [] for name in (*VARIANTS, *alone)}
    loads: list[float] = []
    n = 0

    def sample(name: str) -> float:
        nonlocal n
        n += 1
        if name in alone:
            bodies = events(root, n)
            start = time.perf_counter()
            alone[name](bodies)
            return time.perf_counter() - start
        before = audit_length(signoff), noop.requests
        elapsed = run_cli(cli, folders[name], env, api, n)
        if name in SIGNOFF:
            assert audit_length(signoff) > before[0], f"the {name} did not reach signoff"
        elif name == "no-op HTTP hook":
            assert noop.requests == before[1] + 2, "the no-op hook was not asked twice"
        return elapsed

    names = list(samples)
    for round_ in range(WARMUP + ROUNDS):
        turn = names[round_ % len(names) :] + names[: round_ % len(names)]
        for name in turn:
            elapsed = sample(name)
            if round_ >= WARMUP:
                samples[name].append(elapsed)
        loads.append(os.getloadavg()[0])
    return samples, loads


@dataclass(frozen=True, kw_only=True)
class Compared:
    """A variant against a peer's runs of the same rounds."""

    peer: str
    added_p50_ms: float
    """Its p50 less the peer's."""
    added_same_round_ms: float
    """The median, over the rounds, of its run less the peer's run of the same round."""
    ratio: float
    """Its p50 over the peer's."""


def compare(
    samples: dict[str, list[float]], results: dict[str, Figures], variant: str, peer: str
) -> Compared:
    mine, theirs = results[variant].p50_ms, results[peer].p50_ms
    differences = map(operator.sub, samples[variant], samples[peer])
    return Compared(
        peer=peer,
        added_p50_ms=round(mine - theirs, 1),
        added_same_round_ms=round(statistics.median(differences) * 1_000, 1),
        ratio=round(mine / theirs, 2),
    )


def runs_table(results: dict[str, Figures], compared: dict[str, Compared]) -> Table:
    table = Table(title="One `claude -p` run: an allowed Bash call, then text (ms)")
    for header in ("", "p50", "p90", "max", "n", "added p50", "same round", "p50 / no hook"):
        table.add_column(header, justify="left" if not header else "right")
    for variant in VARIANTS:
        found = results[variant]
        against = compared.get(variant)
        more = ["—", "—", "1.00x"]
        if against is not None:
            more = [f"{against.added_p50_ms:+.1f}", f"{against.added_same_round_ms:+.1f}",
                    f"{against.ratio:.2f}x"]  # fmt: skip
        table.add_row(variant, ms(found.p50_ms), ms(found.p90_ms), ms(found.max_ms),
                      str(found.samples), *more)  # fmt: skip
    return table


def alone_table(results: dict[str, Figures], compared: dict[str, Compared]) -> Table:
    table = Table(title="The hook alone: its PreToolUse and PostToolUse sent by the bench (ms)")
    for header in ("", "p50", "p90", "n", "of the added p50"):
        table.add_column(header, justify="left" if not header else "right")
    for variant in SIGNOFF:
        found = results[f"{variant} alone"]
        added = compared[variant].added_p50_ms
        share = f"{found.p50_ms / added:.2f}" if added > 0 else "—"
        table.add_row(variant, ms(found.p50_ms), ms(found.p90_ms), str(found.samples), share)
    return table


def main() -> None:
    console = wide_console()
    cli = claude()
    version = subprocess.run([cli, "--version"], capture_output=True, text=True, check=True)
    claude_version = version.stdout.split()[0]
    started = time.perf_counter()
    load_before = os.getloadavg()
    console.print(
        f"signoff {__version__}, Claude Code {claude_version}: {ROUNDS} rounds (after {WARMUP}), "
        f"one CLI run per variant per round; load average {load_before[0]:.2f} on "
        f"{os.cpu_count()} cores",
        highlight=False,
    )
    with tempfile.TemporaryDirectory(prefix="signoff-bench-") as name:
        root = Path(name)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with (
            serve(root) as url,
            noop_hook() as noop,
            scripted_messages([]) as api,
            httpx.Client(base_url=url, headers=headers) as signoff,
        ):
            samples, loads = measure(cli, root, url, noop, api, signoff)
    results = {name: figures(seconds) for name, seconds in samples.items()}
    compared = {variant: compare(samples, results, variant, "no hook") for variant in VARIANTS[1:]}
    over_noop = compare(samples, results, "HTTP hook", "no-op HTTP hook")
    console.print(runs_table(results, compared))
    console.print(
        "added p50: the variant's p50 less the no-hook p50; same round: the median of its run "
        "less the no-hook run of the same round",
        style="dim",
    )
    console.print(
        f"signoff's HTTP hook over the no-op HTTP hook: {over_noop.added_p50_ms:+.1f} ms p50, "
        f"{over_noop.added_same_round_ms:+.1f} ms same round ({over_noop.ratio:.2f}x)",
        highlight=False,
    )
    console.print(alone_table(results, compared))
    wall_s = time.perf_counter() - started
    RESULTS.parent.mkdir(exist_ok=True)
    document = {
        **environment("coding_agents"),
        "claude_code": claude_version,
        "cpu_count": os.cpu_count(),
        "config": {"rounds": ROUNDS, "warmup": WARMUP, "allowed_tools": ALLOWED_TOOLS},
        "results": {name: asdict(found) for name, found in results.items()},
        "against_no_hook": {variant: asdict(found) for variant, found in compared.items()},
        "http_hook_against_noop": asdict(over_noop),
        "load_average": {
            "before": load_before,
            "after": os.getloadavg(),
            "each_round_1min": {"min": min(loads), "max": max(loads)},
        },
        "wall_time_s": round(wall_s, 1),
    }
    RESULTS.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    console.print(
        f"load average (1 min) {min(loads):.2f} to {max(loads):.2f} during the rounds; "
        f"wall time {wall_s:.1f} s; results in {RESULTS}",
        highlight=False,
    )


if __name__ == "__main__":
    main()
