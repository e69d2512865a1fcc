"""Block Jacobians J_{t1 t2}: block calls, exact and last-token routes, their SVD, linear maps.

Imports run one way, from the bottom level up (pyproject.toml's ``jacobians`` contract):

1. a block's call and its residual map, and the SVD: ``blocks``, ``svd``;
2. pieces of a route: ``attention`` (own-position and frozen-prefix attention), ``mlp_start``
   (reverse products starting at the MLP's projection), ``step`` (one decoding step recorded
   against a frozen key/value prefix);
3. the routes: ``full_prompt``, ``last_token``, ``truncated`` (top-k SVD from products);
4. the entry points: ``full`` (``block_jacobians`` picks the cheapest exact route), ``cache``
   (results per prompt under keys the library builds);
5. ``perturbed`` (the model run on noisy input embeddings), and ``linearization``, the check
   of the last-token Jacobians against the model.

May import: ``trace``, ``models``, ``core``.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["attention", "blocks", "cache", "full", "full_prompt", "last_token",
                "linearization", "mlp_start", "perturbed", "step", "svd", "truncated"],
    submod_attrs={
        "attention": ["OWN_POSITION_ATTENTION", "FROZEN_PREFIX_ATTENTION", "STANDARD_EAGER",
                      "attention_implementation", "own_position_attention",
                      "supports_frozen_prefix", "frozen_prefix"],
        "blocks": ["Pairs", "BlockCall", "record_block_calls", "capture_block_calls",
                   "residual_map", "block_function", "block_residual", "stack_jacobians",
                   "resolve_layers", "resolve_pairs", "diagonal_blocks", "progress_bar"],
        "cache": ["jacobian_key", "cached_per_prompt"],
        "full": ["block_jacobians"],
        "full_prompt": ["full_prompt_jacobians"],
        "last_token": ["last_token_jacobians_batched", "last_token_jacobians"],
        "linearization": ["propagate", "cosine", "LinearizationCheck", "linearization_check",
                          "checks_of_one_run", "linearization_checks", "draw_means"],
        "mlp_start": ["MlpOutput", "mlp_output", "route_params", "rms_norm_rows"],
        "perturbed": ["NoiseTokens", "relative_noise", "perturbed_last_states", "at_last_point"],
        "step": ["FrozenPrefix", "capture_last_step", "merge_calls"],
        "svd": ["Svd", "square_jacobians", "svd_sorted"],
        "truncated": ["Tokens", "Products", "TruncatedSVD", "principal_angles",
                      "truncated_block_svd", "truncated_coupling_matrices"],
    },
)
