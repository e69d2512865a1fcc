"""Paper A's coupling: A = U^T J V across depth and tokens, its summaries, and Jacobian spectra.

May import: ``jacobians``, ``trace``, ``models``, ``stats``, ``core``.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["default_k", "depth", "matrix", "scores", "spectra", "summary", "tokens", "topk"],
    submod_attrs={
        "depth": ["DepthCoupling", "coupling_from_jacobians", "depth_coupling"],
        "matrix": ["coupling_matrix", "coupling_matrices"],
        "scores": ["offdiagonal_norm", "miscoupling", "offdiag_ratio", "authors_miscoupling",
                   "diagonal_share", "strength", "chance_strength", "offdiagonal_mean",
                   "mean_diagonal_share", "layer_strength", "mean_strength", "AuthorsSplit",
                   "authors_split"],
        "spectra": ["depth_axis", "inverse_top_fit", "inverse_depth_r2_gain", "power_law_fit",
                    "prompt_inverse_r2"],
        "summary": ["adjacency_weights", "DepthSummary", "summarize_depth", "PromptScores",
                    "prompt_scores"],
        "topk": ["top_singular"],
        "tokens": ["Kind", "KINDS", "KIND_TITLES", "kind_pairs", "cross_coupling", "TokenCoupling",
                   "token_coupling", "token_coupling_with_control", "CouplingSummary",
                   "tile_shares", "summarize", "summarize_kinds", "kind_shares",
                   "prompt_shares", "complete_prompts",
                   "shares_by_prompt"],
    },
)
