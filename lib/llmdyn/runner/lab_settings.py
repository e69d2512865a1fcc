"""The project's JupyterLab settings: no news feed, no update check (`make lab` stays offline).

JupyterLab 4 asks on first start whether to fetch "official Jupyter news" and checks for
updates, both from a website. The project turns both off with a settings override that
JupyterLab reads from ``<prefix>/share/jupyter/lab/settings/overrides.d/*.json`` (the
``overrides.d`` files are namespaced per package, so a user's own ``overrides.json`` is left
alone). ``llmdyn lab`` (and so ``make lab``) installs it before starting the server.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

NOTIFICATION = "@jupyterlab/apputils-extension:notification"
OVERRIDES = {NOTIFICATION: {"fetchNews": "false",  # "Never" (not "none", which asks)
                            "checkForUpdates": False}}


def settings_dir(prefix: str | Path = sys.prefix) -> Path:
    """JupyterLab's application settings directory of the environment at ``prefix``."""
    return Path(prefix) / "share" / "jupyter" / "lab" / "settings"


def install(prefix: str | Path = sys.prefix) -> Path:
    """Write the project's overrides to ``<settings_dir>/overrides.d/llmdyn.json``; return it."""
    path = settings_dir(prefix) / "overrides.d" / "llmdyn.json"
    text = json.dumps(OVERRIDES, indent=2) + "\n"
    if path.is_file() and path.read_text() == text:
        return path  # installed: a read-only environment needs no write
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as err:  # a read-only venv: the lab runs, it only asks about news
        print(f"llmdyn lab: note: cannot write {path} ({os.strerror(err.errno or 0)}), so "
              "JupyterLab may ask whether to fetch news; answer no (or make that folder "
              "writable)", file=sys.stderr)
    return path
