"""``python -m llmdyn …``: the same as the ``llmdyn`` command (used by the workflow's jobs)."""

from llmdyn.book.build import main

raise SystemExit(main())
