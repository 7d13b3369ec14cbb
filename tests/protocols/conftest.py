"""The protocol tests' fixtures."""

from tests.protocols.live import side

__all__ = ["side"]
