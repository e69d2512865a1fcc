"""Checks of the workflow's config that no value is silently ignored or dropped."""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

import yaml

from llmdyn import LlmdynError
from llmdyn.core.paths import REPO
from llmdyn.core.store import safe_name
from llmdyn.runner.build import chapters, resolve_model

# Where `llmdyn workflow` was run from, for Snakemake (which runs in --directory): a relative
# model path in a chapter's params file is relative to it, as --model's is.
INVOKED_FROM = "LLMDYN_INVOKED_FROM"


def invoked_from() -> Path:
    """The directory the user ran the workflow from.

    ``llmdyn workflow``'s, else the shell's (``$PWD``): Snakemake has changed to
    ``--directory`` by the time the Snakefile runs.
    """
    for value in (os.environ.get(INVOKED_FROM), os.environ.get("PWD")):
        if value and Path(value).is_dir():
            return Path(value)
    return Path.cwd()


def check_params_files(path: Path, root: Path = REPO, base: Path | None = None) -> None:
    """Refuse a ``chapter_params`` file that would be ignored or misread.

    That is a file naming no chapter (a typo), one that is not a mapping of parameters, or a
    local model there that does not exist under ``base`` (None: :func:`invoked_from`).

    Raises:
        LlmdynError: naming the file and the closest chapter name, or what is wrong in it.
    """
    known = chapters(root)
    for file in sorted(path.glob("*.y*ml")):
        if file.stem in known and file.suffix != ".yaml":
            raise LlmdynError(f"workflow config chapter_params: {file} would be ignored: only "
                              f"<chapter>.yaml files are read; rename it to {file.stem}.yaml")
        if file.stem in known:
            _check_params_file(file, base or invoked_from())
            continue
        close = difflib.get_close_matches(file.stem, known, n=1, cutoff=0.5)
        hint = f"did you mean {close[0]}.yaml?" if close else f"chapters: {', '.join(known)}"
        raise LlmdynError(f"workflow config chapter_params: {file} names no chapter, so it "
                          f"would be ignored; {hint} (rename it, or remove it)")


def check_measure_models(config: dict[str, Any]) -> None:
    """Refuse two measured models whose result files would be the same (``safe_name``).

    Raises:
        LlmdynError: naming both models and the file they would share.
    """
    seen: dict[str, str] = {}
    for model in [*config.get("sweep_models", []), *config.get("measure_models", [])]:
        other = seen.setdefault(safe_name(model), model)
        if other != model:
            raise LlmdynError(f"workflow config measure_models/sweep_models: {other!r} and "
                              f"{model!r} would share one result file ({safe_name(model)}.json), "
                              "so one of them would not be measured; list one under another "
                              f"name, e.g. a symbolic link to it: ln -s '{model}' "
                              f"'{model.rstrip('/')}-2'")


def _check_params_file(file: Path, base: Path) -> None:
    """A chapter's params file: YAML holding a mapping, its local models existing under base.

    An alias (``*name``) is refused before the file is loaded: aliases nested a few levels
    deep stand for gigabytes once anything (the Snakefile's ``json.dumps``) writes them out.
    """
    text = file.read_text()
    try:
        alias = next((e for e in yaml.parse(text) if isinstance(e, yaml.AliasEvent)), None)
        if alias is not None:
            raise LlmdynError(f"workflow config chapter_params: {file} uses a YAML alias "
                              f"(*{alias.anchor}, line {alias.start_mark.line + 1}); write the "
                              "value out in full: an alias can stand for gigabytes of "
                              "parameters")
        given = yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        where = getattr(err, "problem_mark", None)
        raise LlmdynError(f"workflow config chapter_params: {file} is not valid YAML"
                          f"{f' (line {where.line + 1})' if where else ''}; write one "
                          "'name: value' per line") from None
    if not isinstance(given, dict):
        raise LlmdynError(f"workflow config chapter_params: {file} holds a "
                          f"{type(given).__name__}, not notebook parameters; write one "
                          "'name: value' per line, e.g. 'k: 4'")
    compare = given.get("compare_models")
    for model in [given.get("model"), *(compare if isinstance(compare, list) else [])]:
        if isinstance(model, str):
            resolve_model(model, base, f"model in {file}")
