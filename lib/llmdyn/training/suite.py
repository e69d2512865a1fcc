"""A Pythia-style training suite trained here: sizes, seeds, checkpoints (paper A §5.3).

Pythia (Biderman et al., 2023) trains GPT-NeoX models of growing depth and width on the same data
in the same order and publishes checkpoints at log-spaced then evenly spaced steps. Its checkpoints
live on the Hugging Face hub, which this machine cannot reach, so we train a scaled down suite of
the same architecture (parallel attention and MLP, rotary embeddings on a quarter of each head,
untied embeddings) on offline public-domain text (`llmdyn.training.corpus`), with Pythia's
optimiser recipe (`llmdyn.training.loop`). Every checkpoint is a directory that
``AutoModelForCausalLM.from_pretrained`` and ``llmdyn.models.load_model`` both load.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from filelock import FileLock

from llmdyn import LlmdynError
from llmdyn.core.checks import check_root, torch_device
from llmdyn.core.paths import results_root
from llmdyn.core.store import atomic_write
from llmdyn.training import corpus
from llmdyn.training import loop as training
from llmdyn.training.lm_task import LanguageModelTask
from llmdyn.training.schedule import Schedule, check_steps, checkpoint_steps


@dataclass(frozen=True)
class Size:
    """One model size; depth and width grow together, as in Pythia."""

    name: str
    n_layers: int
    d_model: int
    n_heads: int

    def __post_init__(self) -> None:
        """Check that the heads divide the width."""
        if self.n_layers < 1 or self.d_model < 1 or self.n_heads < 1:
            raise LlmdynError(f"size {self.name!r}: layers, d_model and heads must be >= 1")
        if self.d_model % self.n_heads:
            raise LlmdynError(f"size {self.name!r}: d_model {self.d_model} is not divisible by "
                              f"its {self.n_heads} heads; choose a d_model that is a multiple "
                              "of n_heads")


@dataclass(frozen=True)
class Run:
    """One training run of a suite: a size, a seed, a learning rate and regularisation."""

    size: Size
    seed: int = 0
    lr: float = 1e-3
    weight_decay: float = 0.01  # Pythia: 0.01
    dropout: float = 0.0  # Pythia: 0
    steps: int | None = None  # the token budget in updates (None: the suite's steps)
    data_fraction: float = 1.0  # the data budget: this prefix of the training split, repeated

    def __post_init__(self) -> None:
        """Check the budgets."""
        if self.steps is not None and self.steps < 1:
            raise LlmdynError(f"run {self.name}: steps must be >= 1 or None, got {self.steps}")
        if not 0 < self.data_fraction <= 1:
            raise LlmdynError(f"run {self.name}: data_fraction must be in (0, 1], got "
                              f"{self.data_fraction}")

    @property
    def name(self) -> str:
        """Directory name, e.g. ``s-seed0``, ``s-seed0-wd0.1`` or ``p2w32-seed3-n128-d0.05``."""
        name = f"{self.size.name}-seed{self.seed}"
        if self.weight_decay != 0.01:
            name += f"-wd{self.weight_decay:g}"
        if self.dropout:
            name += f"-drop{self.dropout:g}"
        if self.steps is not None:
            name += f"-n{self.steps}"
        if self.data_fraction != 1:
            name += f"-d{self.data_fraction:g}"
        return name


@dataclass(frozen=True)
class Suite:
    """A named set of runs sharing data, tokenizer, schedule and checkpoint steps."""

    name: str
    runs: tuple[Run, ...]
    steps: int = 512  # optimizer updates per run
    batch_size: int = 8  # sequences per update
    seq_len: int = 128  # tokens per sequence (and the models' context)
    vocab_size: int = 4096
    warmup_fraction: float = 0.05
    heldout_fraction: float = 0.1
    eval_sequences: int = 32  # sequences in each fixed evaluation set (train and held-out)
    corpus: str | None = None  # None: the default npm corpus; "sotu"/"moby-dick"; a directory
    ood_corpus: str | None = None  # a corpus whose loss every checkpoint records (ood_loss)
    max_documents: int | None = None  # None: every document; else this many, evenly spaced
    checkpoints: tuple[int, ...] | None = None  # None: Pythia's steps cut to `steps`
    final_only: bool = False  # each run saves its last step only (overrides `checkpoints`)
    eval_spread: bool = False  # evaluation windows spread over each split (else the first ones)
    device: str = "cpu"
    note: str = ""  # what the suite is for

    def __post_init__(self) -> None:
        """Check the runs and the steps."""
        names = [r.name for r in self.runs]
        if not names or len(set(names)) != len(names):
            raise LlmdynError(f"suite {self.name!r}: runs must be non-empty and distinct, "
                              f"got {names}")
        for run in self.runs:
            check_steps(self.run_checkpoints(run), self.run_steps(run))

    def checkpoint_steps(self) -> list[int]:
        """The steps saved by every run of the suite's own length."""
        return list(self.checkpoints) if self.checkpoints is not None else \
            checkpoint_steps(self.steps)

    def run_steps(self, run: Run) -> int:
        """Optimizer updates of ``run``: its own budget, else the suite's."""
        return run.steps if run.steps is not None else self.steps

    def run_checkpoints(self, run: Run) -> list[int]:
        """The steps ``run`` saves: its last one with `final_only`, else `checkpoint_steps`."""
        if self.final_only:
            return [self.run_steps(run)]
        if run.steps is not None and run.steps != self.steps:
            raise LlmdynError(f"run {run.name} has its own steps ({run.steps}); its suite "
                              f"{self.name!r} needs final_only=True (one checkpoint grid "
                              "per suite)")
        return self.checkpoint_steps()

    @property
    def tokens_per_step(self) -> int:
        """Tokens seen per optimizer update."""
        return self.batch_size * self.seq_len


SIZES = {s.name: s for s in (
    Size("xs", 2, 128, 4), Size("s", 4, 192, 6), Size("m", 6, 256, 8),  # the CPU suite
    Size("t1", 2, 32, 2), Size("t2", 3, 48, 4),  # tests
    *(Size(f"p{depth}w{width}", depth, width, width // 16)  # the population of chapter 09
      for depth in (2, 3, 4) for width in (32, 64, 96)),
    Size("70m", 6, 512, 8), Size("160m", 12, 768, 12), Size("410m", 24, 1024, 16),  # Pythia's
)}

def population_runs(depths=(2, 3, 4), widths=(32, 64, 96), steps=(64, 128, 256),
                    data=(1.0, 0.02, 0.005), decays=(0.0, 0.01, 0.1),
                    lr: float = 3e-3) -> tuple[Run, ...]:
    """27 independently initialised runs: depth × width × steps in full, and three more factors.

    Index (a, b, c) runs over the 3 × 3 × 3 grid of depth, width and token budget. The data
    budget is level (a + b + c) mod 3, the weight decay level (a + 2b + c) mod 3, and dropout
    is 0.1 where (2a + b + c) mod 3 = 0 (9 runs), else 0: a 3^(6-3) fractional factorial in
    which every factor is balanced and uncorrelated with every other. Each run has its own
    seed (its index), so no two runs share initial weights or data order.
    """
    runs = []
    for i, (a, b, c) in enumerate((a, b, c) for a in range(3) for b in range(3)
                                  for c in range(3)):
        size = SIZES[f"p{depths[a]}w{widths[b]}"]
        runs.append(Run(size, seed=i, lr=lr, weight_decay=decays[(a + 2 * b + c) % 3],
                        dropout=0.1 if (2 * a + b + c) % 3 == 0 else 0.0, steps=steps[c],
                        data_fraction=data[(a + b + c) % 3]))
    return tuple(runs)


SUITES: dict[str, Suite] = {
    "default": Suite(
        "default",
        runs=(Run(SIZES["xs"], 0, lr=2e-3), Run(SIZES["s"], 0, lr=1.5e-3),
              Run(SIZES["m"], 0, lr=1e-3),
              *(Run(SIZES["s"], seed, lr=1.5e-3) for seed in range(1, 5))),
        note="three sizes, and size s with 5 seeds (each its own initial weights and data "
             "order: chapter 08's verdicts are taken over them), 512 updates of 1,024 tokens; "
             "about 15 minutes on 2 CPU cores"),
    "population": Suite(
        "population", runs=population_runs(), steps=256, batch_size=16, seq_len=64,
        vocab_size=1024, eval_sequences=64, corpus="sotu", ood_corpus="moby-dick",
        final_only=True, eval_spread=True,
        note="chapter 09's 27 independent models, final checkpoints only: trained on the State "
             "of the Union addresses, out-of-distribution loss on Moby-Dick"),
    "paper": Suite(
        "paper",
        runs=(Run(SIZES["70m"], 0, lr=1e-3), Run(SIZES["160m"], 0, lr=6e-4),
              Run(SIZES["410m"], 0, lr=3e-4), Run(SIZES["160m"], 1, lr=6e-4)),
        steps=20_000, batch_size=64, seq_len=512, vocab_size=8192, device="cuda",
        note="Pythia's 70M/160M/410M shapes on 655M tokens; for a GPU"),
    "tiny": Suite(
        "tiny",
        runs=(Run(SIZES["t1"], 0, lr=3e-3), Run(SIZES["t2"], 0, lr=3e-3),
              Run(SIZES["t1"], 1, lr=3e-3), Run(SIZES["t1"], 2, lr=3e-3)),  # 3 seeds of t1
        steps=8, batch_size=2, seq_len=32, vocab_size=320, warmup_fraction=0.25,
        eval_sequences=4, max_documents=24, note="for tests: a few steps on a tiny corpus"),
    "tiny-population": Suite(
        "tiny-population", runs=population_runs(steps=(2, 4, 6), data=(1.0, 0.5, 0.25),
                                                lr=3e-3)[::4],
        steps=6, batch_size=2, seq_len=32, vocab_size=320, warmup_fraction=0.25,
        eval_sequences=4, max_documents=24, corpus="sotu", ood_corpus="moby-dick",
        final_only=True, eval_spread=True, note="for tests: the population's design, tiny"),
}


def get_suite(name: str) -> Suite:
    """A suite from `SUITES` by name, with a clear error for an unknown one."""
    if name not in SUITES:
        raise LlmdynError(f"unknown suite {name!r}; known suites: {', '.join(SUITES)}")
    return SUITES[name]


def gpt_neox_config(size: Size, suite: Suite, dropout: float = 0.0):
    """Pythia's GPT-NeoX configuration at this size, with the suite's vocabulary and context."""
    from transformers import GPTNeoXConfig

    return GPTNeoXConfig(
        vocab_size=suite.vocab_size, hidden_size=size.d_model, num_hidden_layers=size.n_layers,
        num_attention_heads=size.n_heads, intermediate_size=4 * size.d_model,
        max_position_embeddings=suite.seq_len, rotary_pct=0.25, rotary_emb_base=10000,
        use_parallel_residual=True, tie_word_embeddings=False, initializer_range=0.02,
        layer_norm_eps=1e-5, hidden_dropout=dropout, attention_dropout=dropout,
        bos_token_id=0, eos_token_id=0, pad_token_id=0,
    )


@dataclass
class PreparedData:
    """The suite's tokenizer and token streams, cached under ``<root>/_data/<key>/``."""

    tokenizer: Any
    train: np.ndarray  # [tok] int32
    heldout: np.ndarray  # [tok] int32
    digest: str  # sha256 of the corpus documents
    directory: Path
    heldout_docs: list[corpus.Document] = field(repr=False, default_factory=list)
    ood: np.ndarray | None = None  # [tok] int32: the suite's OOD corpus, same tokenizer


def suite_documents(suite: Suite, corpus_dir: str | Path | None = None) -> list[corpus.Document]:
    """The suite's corpus (or ``corpus_dir``), cut to ``max_documents`` evenly spaced ones."""
    docs = corpus.load_documents(corpus_dir if corpus_dir is not None else suite.corpus)
    if suite.max_documents is not None and len(docs) > suite.max_documents:
        docs = docs[:: len(docs) // suite.max_documents][: suite.max_documents]
    return docs


def prepare_data(suite: Suite, root: str | Path | None = None,
                 corpus_dir: str | Path | None = None) -> PreparedData:
    """Split the corpus, train the tokenizer on the train split and tokenise both splits, once.

    They are kept under ``<root>/_data`` (``root`` None: :func:`default_root`).
    """
    from transformers import AutoTokenizer

    docs = suite_documents(suite, corpus_dir)
    digest = corpus.corpus_digest(docs)
    split = corpus.split_documents(docs, suite.heldout_fraction)
    ood_docs = corpus.load_documents(suite.ood_corpus) if suite.ood_corpus else None
    key = f"{digest[:12]}-v{suite.vocab_size}-h{suite.heldout_fraction:g}"
    if ood_docs is not None:  # its own directory: the streams file then holds a third stream
        key += f"-ood{corpus.corpus_digest(ood_docs)[:12]}"
    directory = Path(root if root is not None else default_root()) / "_data" / key
    tok_dir, streams = directory / "tokenizer", directory / "streams.npz"
    directory.mkdir(parents=True, exist_ok=True)
    with FileLock(str(directory / ".prepare.lock")):  # concurrent `llmdyn train`: one prepares
        for old in directory.glob(".streams.*.tmp.npz"):  # an older llmdyn's leftovers
            old.unlink(missing_ok=True)  # (the lock is held: no writer of this file runs)
        if not streams.exists():
            tokenizer = corpus.train_tokenizer(split.train, suite.vocab_size, tok_dir)
            arrays = {"train": corpus.token_stream(tokenizer, split.train),
                      "heldout": corpus.token_stream(tokenizer, split.heldout)}
            if ood_docs is not None:
                arrays["ood"] = corpus.token_stream(tokenizer, ood_docs)
            # whole or absent, and no temp file left behind by a full disk
            atomic_write(streams, lambda f: np.savez(f, **arrays))
    tokenizer = AutoTokenizer.from_pretrained(tok_dir)
    with np.load(streams, allow_pickle=False) as f:
        train, heldout = f["train"], f["heldout"]
        ood = f["ood"] if ood_docs is not None else None
    need = (suite.seq_len + 1) * max(suite.batch_size, suite.eval_sequences)
    if len(train) < need or len(heldout) < suite.seq_len + 1:
        raise LlmdynError(f"corpus too small for suite {suite.name!r}: {len(train)} train and "
                          f"{len(heldout)} held-out tokens, need {need} and "
                          f"{suite.seq_len + 1}; add text or shorten seq_len")
    if ood is not None and len(ood) < suite.seq_len + 1:
        raise LlmdynError(f"OOD corpus {suite.ood_corpus!r} of suite {suite.name!r} has "
                          f"{len(ood)} tokens, fewer than one window ({suite.seq_len + 1})")
    return PreparedData(tokenizer, train, heldout, digest, directory, split.heldout, ood)


def matmul_params(model: torch.nn.Module) -> int:
    """Parameters used in matrix products per token: all but the input embedding lookup."""
    embed = model.get_input_embeddings().weight
    return sum(p.numel() for p in model.parameters() if p is not embed)


def run_config(run: Run, suite: Suite, data: PreparedData) -> dict[str, Any]:
    """The JSON that identifies a run (a resume must match it)."""
    return {"run": run.name, "size": asdict(run.size), "seed": run.seed,
            "lr": run.lr, "weight_decay": run.weight_decay, "dropout": run.dropout,
            "steps": suite.run_steps(run), "batch_size": suite.batch_size,
            "seq_len": suite.seq_len,
            "vocab_size": suite.vocab_size, "warmup_fraction": suite.warmup_fraction,
            "checkpoints": suite.run_checkpoints(run), "corpus_sha256": data.digest,
            "eval_sequences": suite.eval_sequences, "architecture": "gpt_neox",
            # only where they are set, so that the runs trained before they existed resume
            **({"data_fraction": run.data_fraction} if run.data_fraction != 1 else {}),
            **({"ood_corpus": suite.ood_corpus} if suite.ood_corpus else {})}


def train_run(run: Run, suite: Suite, root: Path, data: PreparedData, *,
              progress: bool = True) -> training.RunResult:
    """Train (or resume, or skip) one run of the suite into ``<root>/<run name>/``."""
    from transformers import GPTNeoXForCausalLM

    torch.manual_seed(run.seed)
    model = GPTNeoXForCausalLM(gpt_neox_config(run.size, suite, run.dropout)).to(suite.device)
    steps = suite.run_steps(run)
    schedule = Schedule(steps=steps, lr=run.lr, weight_decay=run.weight_decay,
                        warmup=max(1, round(suite.warmup_fraction * steps)))
    facts = {"flops_per_token": 6 * matmul_params(model),
             "params": sum(p.numel() for p in model.parameters())}
    with training.run_lock(root / run.name):  # a second `llmdyn train` of it waits, then skips
        task = LanguageModelTask(data, suite, run.seed, run.data_fraction)
        return training.train(model, task, root / run.name,
                              schedule=schedule, checkpoints=suite.run_checkpoints(run),
                              config=run_config(run, suite, data), facts=facts, desc=run.name,
                              progress=progress)


def default_root() -> Path:
    """Where named suites' runs go: ``<results root>/suite`` (``$LLMDYN_RESULTS/suite``)."""
    return results_root() / "suite"


def train_suite(suite: Suite | str, root: str | Path | None = None, *,
                runs: Sequence[str] | None = None, corpus_dir: str | Path | None = None,
                device: str | None = None, progress: bool = True) -> list[training.RunResult]:
    """Train every run of a suite (or the named ``runs``); finished runs are skipped.

    Args:
        suite: a `Suite` or a name from `SUITES`.
        root: where runs and the shared data cache go (None: :func:`default_root`).
        runs: run names to train (None: all).
        corpus_dir: a directory of .txt files instead of the suite's corpus.
        device: train here instead of the suite's device (``"cuda"`` on a GPU).
        progress: progress bars.
    """
    suite = get_suite(suite) if isinstance(suite, str) else suite
    if device is not None:
        suite = replace(suite, device=torch_device(device))
    torch_device(suite.device, f"suite {suite.name!r}'s device")  # before any work
    if suite.device.startswith("cuda"):  # cuBLAS is deterministic only with a fixed workspace
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    chosen = [r for r in suite.runs if runs is None or r.name in runs]
    unknown = set(runs or ()) - {r.name for r in suite.runs}
    if unknown:
        raise LlmdynError(f"suite {suite.name!r} has no run {sorted(unknown)}; its runs: "
                          f"{', '.join(r.name for r in suite.runs)}")
    root = Path(root if root is not None else default_root())
    check_root(root)
    data = prepare_data(suite, root, corpus_dir)
    return [train_run(run, suite, root, data, progress=progress) for run in chosen]


def heldout_prompts(suite: Suite | str, n: int, *, chars: int = 240, seed: int = 0,
                    corpus_dir: str | Path | None = None) -> list[str]:
    """``n`` passages from the held-out documents of the suite's corpus (seeded, word-bounded).

    Every checkpoint is measured on the same passages, which no run trained on.
    """
    suite = get_suite(suite) if isinstance(suite, str) else suite
    docs = suite_documents(suite, corpus_dir)
    split = corpus.split_documents(docs, suite.heldout_fraction)
    return corpus.text_snippets(split.heldout, n, chars=chars, seed=seed)
