"""Checking a Promela model with Spin: the model compiled to a verifier (``pan``) and run, its
report read. Used by the tests (`test_model.py`) and by ``make verify`` (`python -m
tests.verify.spin`), which checks larger bounds."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Checked", "check"]


@dataclass(frozen=True)
class Checked:
    errors: int
    states: int
    """States stored: how much of the state space the search covered."""
    depth: int
    report: str


def check(
    spin: str, model: Path, folder: Path, bounds: dict[str, int], *, claim: str | None = None
) -> Checked:
    """Verify `model` with its `bounds` (its ``#define``s): its assertions and invalid end
    states, or — with `claim` — that LTL property, under weak fairness."""
    defines = [f"-D{name}={value}" for name, value in bounds.items()]

    def run(*args: str) -> None:
        subprocess.run(args, cwd=folder, capture_output=True, text=True, check=True, timeout=1800)

    run(spin, "-a", *defines, str(model.resolve()))
    if claim is None:
        run("gcc", "-O2", "-DSAFETY", "-DNOCLAIM", "-o", "pan", "pan.c")
        out = subprocess.run(["./pan", "-m100000"], cwd=folder, capture_output=True, text=True,
                             timeout=1800)  # fmt: skip
    else:
        run("gcc", "-O2", "-DNFAIR=3", "-o", "pan", "pan.c")  # fairness for up to 9 processes
        out = subprocess.run(["./pan", "-m100000", "-a", "-f", "-N", claim], cwd=folder,
                             capture_output=True, text=True, timeout=1800)  # fmt: skip
    report = out.stdout + out.stderr
    errors = re.search(r"errors: (\d+)", report)
    states = re.search(r"([\d.e+]+) states, stored", report)  # 1.1e+08 past a hundred million
    depth = re.search(r"depth reached (\d+)", report)
    if errors is None or states is None:
        raise RuntimeError(f"pan did not report its search:\n{report}")
    if "max search depth too small" in report:
        raise RuntimeError(f"pan's search was cut off by its depth limit:\n{report}")
    return Checked(
        errors=int(errors.group(1)),
        states=int(float(states.group(1))),
        depth=int(depth.group(1)) if depth else 0,
        report=report,
    )


MODELS = Path(__file__).parents[2] / "verify"
DEEP: dict[str, list[tuple[dict[str, int], str | None]]] = {
    "once.pml": [
        ({"W": w, "IDEMPOTENT": i, "ABORTS": 2}, claim)
        for w in (2, 3)
        for i in (0, 1)
        for claim in (None, "ends")
    ],
    "resume.pml": [({"R": 2}, None), ({"R": 3}, None)],
}
"""What `make verify` checks: more workers and aborts than the tests (minutes, and a few GB)."""


def main() -> int:
    """``make verify``: the models at larger bounds than the tests check, each check's states
    printed."""
    import shutil
    import tempfile

    from tests.installed import DEBIAN

    spin = shutil.which("spin", path=str(DEBIAN / "usr" / "bin")) or shutil.which("spin")
    if spin is None:
        print("spin is not unpacked: `make verify` unpacks Debian's spin", file=sys.stderr)
        return 2
    failed = False
    for name, runs in DEEP.items():
        for bounds, claim in runs:
            with tempfile.TemporaryDirectory() as folder:
                checked = check(spin, MODELS / name, Path(folder), bounds, claim=claim)
            what = "assertions" if claim is None else f"ltl {claim}"
            print(
                f"{name} {bounds} {what}: errors {checked.errors}, "
                f"states {checked.states:,}, depth {checked.depth}",
                flush=True,
            )
            failed |= checked.errors > 0
            if checked.errors:
                print(checked.report)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
