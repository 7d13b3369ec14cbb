"""``python -m signoff``: the same as the ``signoff`` command."""

from signoff.cli import main

main()
