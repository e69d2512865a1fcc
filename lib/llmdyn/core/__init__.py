"""Shared plumbing with no model code: checks, NaN-aware curves, the results store, tables.

May import: nothing from llmdyn but ``LlmdynError``.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["arrays", "atomic", "checks", "closure", "failures", "masked", "paths",
                "result_code", "store", "streams", "tables", "escape"],
    submod_attrs={
        "arrays": ["ArrayLike", "check_values", "checked_tensor", "checked_array", "off_diagonal"],
        "checks": ["prompt_texts", "is_int", "layer_indices", "k_value", "top_k_value", "choice",
                   "positive_int", "torch_device"],
        "masked": ["columns", "finite_mean"],
        "paths": ["REPO", "DATA", "data_file"],
        "store": ["Arrays", "code_hash", "source_hash", "content_hash", "safe_name",
                  "canonical_params", "params_hash", "versions", "umask", "apply_umask",
                  "atomic_write", "ResultStore", "writer_alive"],
        "tables": ["markdown_table", "markdown_grid", "escape_cell"],
        "escape": ["Md", "markdown_text", "markdown_code"],
    },
)
