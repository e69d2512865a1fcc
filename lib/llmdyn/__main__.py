"""``python -m llmdyn …``: the same as the ``llmdyn`` command (used by the workflow's jobs)."""

from llmdyn.cli import main

raise SystemExit(main())
