"""The ``sparkxml`` command line; ``main`` is its entry point."""
from sparkxml.cli.main import main

__all__ = ["main"]
