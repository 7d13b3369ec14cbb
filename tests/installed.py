"""A program from Debian that some tests drive (Prometheus, Spin): its path, or the test skipped
with how to install it — failed under CI, where the Makefile installs it."""

from __future__ import annotations

import os
import shutil

import pytest

__all__ = ["program"]


def program(name: str, package: str | None = None) -> str:
    found = shutil.which(name)
    if found:
        return found
    package = package or name
    if os.environ.get("CI"):
        pytest.fail(f"{name} is missing: `make test` installs Debian's {package} package")
    pytest.skip(f"no {name} on this machine (Debian: apt-get install {package})")
