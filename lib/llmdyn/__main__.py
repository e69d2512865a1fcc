"""``python -m llmdyn …``: the same as the ``llmdyn`` command (used by the workflow's jobs)."""

# llmdyn: outside the code hash (no stored array depends on this module; see core/store.py)

from llmdyn.cli import main

raise SystemExit(main())
