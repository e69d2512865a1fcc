"""Block Jacobians J_{t1 t2}: block calls, exact and last-token routes, their SVD, linear maps.

May import: ``trace``, ``models``, ``core``.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["attention", "blocks", "full", "last_token", "linearization", "mlp_start", "svd",
                "truncated"],
    submod_attrs={
        "attention": ["OWN_POSITION_ATTENTION", "FROZEN_PREFIX_ATTENTION", "STANDARD_EAGER",
                      "attention_implementation", "own_position_attention",
                      "supports_frozen_prefix", "frozen_prefix"],
        "blocks": ["Pairs", "BlockCall", "record_block_calls", "capture_block_calls",
                   "residual_map", "block_function", "block_residual", "stack_jacobians",
                   "resolve_layers", "resolve_pairs", "diagonal_blocks", "progress_bar"],
        "full": ["block_jacobians"],
        "last_token": ["FrozenPrefix", "capture_last_step", "merge_calls",
                       "last_token_jacobians_batched", "last_token_jacobians"],
        "linearization": ["NoiseTokens", "propagate", "cosine", "relative_noise",
                          "perturbed_last_states", "LinearizationCheck", "linearization_check",
                          "linearization_checks", "draw_means"],
        "svd": ["Svd", "square_jacobians", "svd_sorted"],
        "truncated": ["Tokens", "Products", "TruncatedSVD", "principal_angles",
                      "truncated_block_svd", "truncated_coupling_matrices"],
    },
)
