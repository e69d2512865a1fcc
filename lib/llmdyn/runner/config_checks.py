"""Checks of the workflow's config that no value is silently ignored or dropped."""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any

import yaml

from llmdyn import LlmdynError
from llmdyn.core.paths import REPO, results_root
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


def check_suite(suite: Any) -> None:
    """Refuse a ``suite`` the training package does not define (None or "": the chapters').

    The Snakefile refuses it too, but only while Snakemake plans, after its start-up.
    """
    if not suite:
        return
    from llmdyn.training.suite import SUITES  # here: it imports torch, which few runs need

    if suite not in SUITES:
        close = difflib.get_close_matches(str(suite), list(SUITES), n=1)
        hint = f"did you mean suite={close[0]}? " if close else ""
        raise LlmdynError(f"workflow config suite: unknown suite {suite!r}; {hint}suites: "
                          f"{', '.join(SUITES)}")


def stale_measurements(config: dict[str, Any], directory: Path) -> list[str]:
    """The measured models' result files that hold other parameters than ``config`` asks for.

    Snakemake keeps a job's parameters under its working directory (``.snakemake``), so a
    run in another ``--directory`` sharing one ``LLMDYN_RESULTS`` would take a file measured
    with another ``k`` as up to date; :func:`run_workflow` has Snakemake measure these again.
    Paths are as the Snakefile writes them from ``directory`` (relative inside it).
    """
    from llmdyn.sweep.job import MeasureParams, result_path  # here: it imports torch

    asked = config["measure"]
    want = MeasureParams(k=asked["k"], n_per_task=asked["n_per_task"],
                         tasks=tuple(asked["tasks"]), seed=asked["seed"],
                         max_chars=asked.get("max_chars")).as_dict()
    root = Path(directory).absolute() / results_root()  # an absolute root stays as it is
    stale = []
    for model in dict.fromkeys([*config.get("sweep_models", []),
                                *config.get("measure_models", [])]):
        path = result_path(model, root / "measure")
        try:
            have = json.loads(path.read_text()).get("params")
        except (OSError, ValueError, AttributeError):
            continue  # none yet, or unreadable: Snakemake's own rules decide
        if have != want:
            inside = path.is_relative_to(Path(directory).absolute())
            stale.append((path.relative_to(Path(directory).absolute()) if inside
                          else path).as_posix())
    return stale
