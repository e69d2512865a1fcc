"""Shared plumbing with no model code: input checks, NaN-aware curve statistics, the results store.

May import: nothing from llmdyn but ``LlmdynError``.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["checks", "masked", "store"],
    submod_attrs={
        "checks": ["choice", "k_value", "layer_indices", "prompt_texts"],
        "masked": ["columns", "finite_mean"],
        "store": ["ResultStore", "canonical_params", "code_hash", "content_hash", "params_hash",
                  "safe_name"],
    },
)
