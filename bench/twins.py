r"""Benchmark loading a model and its untrained twins, as a chapter does: trained, then 3 seeds.

Two routes, alternated in one process (so both see the same machine load), each repeated:

- ``baseline``: the plain transformers route, tuned: the twin is built from
  ``AutoConfig.from_pretrained`` alone (no weights read), with ``from_config`` and its default
  initialisation, and the tokenizer is read with ``AutoTokenizer.from_pretrained`` at every load.
- ``llmdyn``: ``llmdyn.models.load_model``: the same config and the same initialiser, without
  torch's default init (which transformers draws again), and each tokenizer parsed once per
  process.

Both routes first read the trained model the same way. The ratio is llmdyn / baseline (below 1:
faster). Usage (from the repository root)::

    PYTHONPATH=lib OMP_NUM_THREADS=1 .venv/bin/python bench/twins.py --out bench/twins.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

import torch  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from llmdyn.models import loading as models  # noqa: E402
from llmdyn.models import pretrained  # noqa: E402
from llmdyn.models.packaged import packaged_safetensors  # noqa: E402
from llmdyn.models.twins import twin_config  # noqa: E402

SEEDS = (0, 1, 2)


def baseline(name: str) -> None:
    """Trained model, then one twin per seed, by the plain transformers route."""
    path = str(packaged_safetensors(name)[0])
    AutoModelForCausalLM.from_pretrained(path, use_safetensors=True, dtype=torch.float32)
    AutoTokenizer.from_pretrained(path)
    for seed in SEEDS:
        config = twin_config(name, AutoConfig.from_pretrained(path))
        torch.manual_seed(seed)
        AutoModelForCausalLM.from_config(config, attn_implementation="eager",
                                         dtype=torch.float32)
        AutoTokenizer.from_pretrained(path)


def ours(name: str) -> None:
    """The same loads through llmdyn (a fresh tokenizer cache, as in a new chapter process)."""
    pretrained._tokenizer.cache_clear()
    models.load_model(name)
    for _, _twin in models.load_twins(name, list(SEEDS)):
        pass


def main() -> None:
    """Time both routes for each model and print (and with --out, write) the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rows = []
    for name in args.models:
        ours(name)  # warm the file cache for both routes
        times: dict[str, list[float]] = {"baseline": [], "llmdyn": []}
        for _ in range(args.repeats):
            for route, run in (("baseline", baseline), ("llmdyn", ours)):
                start = time.perf_counter()
                run(name)
                times[route].append(time.perf_counter() - start)
        base, own = (statistics.median(times[r]) for r in ("baseline", "llmdyn"))
        rows.append({"model": name, "baseline_s": round(base, 2), "llmdyn_s": round(own, 2),
                     "ratio": round(own / base, 3), "runs": times})
        print(f"{name}: trained + {len(SEEDS)} twins: baseline {base:.1f} s, llmdyn {own:.1f} s, "
              f"ratio {own / base:.2f} (median of {args.repeats})")
    if args.out:
        args.out.write_text(json.dumps({
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "machine": platform.platform(), "torch_threads": torch.get_num_threads(),
            "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
