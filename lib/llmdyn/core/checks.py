"""Input checks shared by the compute functions: prompt lists, layer indices, k and modes."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from llmdyn import LlmdynError
from llmdyn.core.atomic import not_regular

__all__ = ["choice", "is_int", "k_value", "layer_indices", "nonfinite_rows", "positive_int",
           "prompt_texts", "top_k_value", "torch_device"]


def prompt_texts(prompts: Any, arg: str = "prompts") -> list[str]:
    """The texts of a non-empty list of prompts (str or :class:`llmdyn.data.Prompt`).

    A single string is refused rather than iterated, which would split it into characters.

    Raises:
        LlmdynError: `prompts` is one str or Prompt, not a sequence, empty, or holds an empty,
            whitespace-only or non-text item.
    """
    if isinstance(prompts, (str, bytes)) or _is_prompt(prompts):
        raise LlmdynError(f"{arg} must be a list of texts, got one {type(prompts).__name__} "
                          f"{prompts!r:.60}; wrap it in a list: [{prompts!r:.40}]")
    if not isinstance(prompts, Sequence) or len(prompts) == 0:
        raise LlmdynError(f"{arg} must be a non-empty list of texts, got {prompts!r:.80}")
    texts = []
    for i, p in enumerate(prompts):
        text = p.text if _is_prompt(p) else p
        if not isinstance(text, str) or not text.strip():
            raise LlmdynError(f"{arg}[{i}] must be a non-empty text (str or Prompt), got "
                              f"{type(p).__name__} {p!r:.60}")
        texts.append(text)
    return texts


def _is_prompt(value: Any) -> bool:
    # a data.Prompt, recognised by its shape: core sits below data and does not import it
    return isinstance(getattr(value, "text", None), str) and hasattr(value, "task")


def is_int(value: Any) -> bool:
    """Whether `value` is an int (Python or numpy), not a bool and not a float like 1.0."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


_is_int = is_int


def layer_indices(layers: Any, n_layers: int, arg: str = "layers") -> list[int]:
    """Blocks as 0-based ints, negative indices resolved once (``-1`` -> ``n_layers - 1``).

    Args:
        layers: a sequence of ints in ``[-n_layers, n_layers)``, or None for every block.
            Floats, strings and bools are refused, never truncated (1.7 is not block 1).
        n_layers: the model's number of blocks L.
        arg: the argument's name, for the message.

    Returns:
        ``[len(layers)]`` distinct block indices in ``[0, n_layers)``, in the given order.
    """
    if layers is None:
        return list(range(n_layers))
    if isinstance(layers, (str, bytes)) or not isinstance(layers, (Sequence, np.ndarray)):
        raise LlmdynError(f"{arg} must be a list of block indices, got {layers!r:.60}")
    bad = [b for b in layers if not _is_int(b)]
    if bad:
        raise LlmdynError(f"{arg} must hold integer block indices, got {bad[0]!r} "
                          f"({type(bad[0]).__name__}) in {list(layers)!r:.80}; write e.g. [1]")
    out_of_range = [int(b) for b in layers if not -n_layers <= b < n_layers]
    if out_of_range or len(layers) == 0:
        raise LlmdynError(f"{arg} {out_of_range or list(layers)} out of range: the model has "
                          f"blocks 0..{n_layers - 1} (negative indices count from the end; "
                          "block b maps X^b to X^(b+1), the paper's l = b+1)")
    resolved = [int(b) % n_layers for b in layers]
    if len(set(resolved)) != len(resolved):
        raise LlmdynError(f"{arg} {list(layers)} name a block twice (resolved: {resolved}); "
                          "give each block once")
    return resolved


def _count(value: Any, minimum: int, largest: int, arg: str, bound: str, why: str = "") -> int:
    """``value`` as an int with ``minimum <= value <= largest``, else an error naming ``arg``."""
    if not _is_int(value) or not minimum <= value <= largest:
        reason = f" ({why})" if why else ""
        raise LlmdynError(f"{arg}: got {value!r}; expected an integer with {minimum} <= {arg} <= "
                          f"{bound} = {largest}{reason}")
    return int(value)


def k_value(k: Any, d_model: int, *, minimum: int = 1, why: str = "") -> int:
    """Check k, a number of top singular vectors: an int with ``minimum <= k <= d_model``.

    Args:
        k: the value to check.
        d_model: the largest allowed value (a Jacobian has d_model singular vectors).
        minimum: the smallest (2 where r(A) divides by k - 1).
        why: the reason for `minimum`, shown in the message.
    """
    return _count(k, minimum, d_model, "k", "d_model", why)


def top_k_value(top_k: Any, vocab_size: int) -> int:
    """Check top_k, a number of tokens read out per layer: ``1 <= top_k <= vocab_size``."""
    return _count(top_k, 1, vocab_size, "top_k", "the vocabulary size")


def choice(value: Any, choices: Sequence[str], arg: str) -> str:
    """`value` if it is one of `choices`, else LlmdynError listing them."""
    if not isinstance(value, str) or value not in choices:
        raise LlmdynError(f"{arg}: got {value!r}; expected one of {', '.join(map(repr, choices))}")
    return value


def positive_int(value: Any, arg: str, *, none_means: str | None = None) -> int | None:
    """`value` if it is an int >= 1 (not a bool or a float), else LlmdynError naming `arg`.

    With ``none_means`` (what None stands for, for the message), None is accepted too.
    """
    if value is None and none_means is not None:
        return None
    if not _is_int(value) or value < 1:
        alt = f", or None ({none_means})" if none_means else ""
        raise LlmdynError(f"{arg} must be a positive integer{alt}, got {value!r}")
    return int(value)


def torch_device(device: Any, arg: str = "device") -> str:
    """`device` if torch knows it and it exists on this machine, else LlmdynError naming `arg`.

    Checked before any work starts, so ``--device banana`` or ``--device cuda`` on a CPU-only
    build is one message, not a torch error after minutes of data preparation.
    """
    import torch  # here: core is imported by modules that never need torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise LlmdynError(f"{arg} must be a torch device such as 'cpu' or 'cuda', got "
                          f"{device!r} ({err})") from None
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise LlmdynError(f"{arg}={device!r}, but this torch ({torch.__version__}) sees no CUDA "
                          "GPU (a CPU-only build, or no driver); use 'cpu', or install a CUDA "
                          "build of torch on a machine with a GPU.")
    if parsed.type == "cuda" and parsed.index is not None \
            and parsed.index >= torch.cuda.device_count():
        raise LlmdynError(f"{arg}={device!r}, but only {torch.cuda.device_count()} CUDA "
                          "device(s) exist; use 'cuda' or 'cuda:0'.")
    if parsed.type == "mps" and not torch.backends.mps.is_available():
        raise LlmdynError(f"{arg}={device!r}, but this machine has no Apple MPS device; use 'cpu'.")
    if parsed.type == "meta":  # tensors without data: every measurement would be meaningless
        raise LlmdynError(f"{arg}={device!r} holds shapes but no numbers, so nothing can be "
                          "measured or trained on it; use 'cpu' or 'cuda'.")
    backend = getattr(torch, parsed.type, None)  # torch.xpu, torch.mtia, ...: asked, not assumed
    if parsed.type not in ("cpu", "cuda", "mps") and not (
            callable(getattr(backend, "is_available", None)) and backend.is_available()):
        raise LlmdynError(f"{arg}={device!r}, but this torch ({torch.__version__}) has no "
                          f"usable {parsed.type!r} device here; use 'cpu', or 'cuda' on a GPU.")
    return str(device)


def all_finite(x: Any) -> bool:
    """True when no entry of a tensor or array is NaN or infinite: exactly ``isfinite(x).all()``.

    The sum comes first, as in :func:`nonfinite_rows`: one pass and no mask, about 25 times
    cheaper than torch's ``isfinite(x).all()`` on a ``[layer, d_model, d_model]`` float32 stack
    on one thread. A NaN or infinite entry makes the sum NaN or infinite, so a finite sum clears
    every entry; finite entries can overflow the sum too, so a non-finite sum is confirmed entry
    by entry. Integer and boolean arrays are finite.
    """
    if hasattr(x, "detach"):  # a torch tensor, without importing torch here
        import torch

        x = x.detach()
        return bool(torch.isfinite(x.sum())) or bool(torch.isfinite(x).all())
    a = np.asarray(x)
    if a.dtype.kind not in "fc":
        return True
    with np.errstate(over="ignore", invalid="ignore"):  # an overflowing sum is confirmed below
        total = a.sum()
    return bool(np.isfinite(total)) or bool(np.isfinite(a).all())


def nonfinite_rows(x: Any) -> Any:
    """Which rows of a tensor hold a NaN or an infinity: ``[rows]`` bool for ``x [rows, ...]``.

    Each row is summed first (one pass, about 20 times cheaper than ``isfinite`` on SmolLM2's
    ``[layer, d_model, d_model]`` Jacobians): a NaN or infinite entry makes its row's sum NaN or
    infinite. A sum of finite entries can overflow too, so any non-finite sum is confirmed
    entry by entry, and the answer is always exactly ``~isfinite(x).all(row)``.
    """
    import torch

    rows = x.reshape(x.shape[0], -1)
    bad = ~torch.isfinite(rows.sum(dim=1))
    if bad.any():  # a NaN or an infinity, or finite entries whose sum overflowed
        bad = ~torch.isfinite(rows).all(dim=1)
    return bad


def check_root(root: str | os.PathLike, arg: str = "--root") -> Path:
    """``root`` if runs can be written under it (it, or what exists of it, is a directory).

    Checked before any work (training, data preparation).

    Raises:
        LlmdynError: ``root``, or a folder on its way, is a file (or a device, FIFO, socket).
    """
    if not str(root).strip():  # Path("") is the working directory
        raise LlmdynError(f"{arg} is empty; give a directory (it is created if missing)")
    root = Path(root)
    found = next((p for p in (root, *root.parents) if p.exists()), None)
    if found is not None and not found.is_dir():
        kind = not_regular(found) or "a file"  # a device, FIFO or socket said as such
        where = f"is {kind}" if found == root else f"lies under {kind} {found}"
        raise LlmdynError(f"{arg} {root} {where}; give a directory (it is created if missing)")
    return root
