"""Token trajectories along depth: norms, LSS, equidistance, expodistance and the logit lens.

May import: ``trace``, ``models``, ``data``, ``core``.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["geometry", "growth", "last_token", "lens", "regularity", "shape"],
    submod_attrs={
        "geometry": ["token_states", "DepthProfile", "depth_profile", "seed_mean", "residuals",
                     "layer_mean", "layer_range", "step_lengths", "last_step_ratio",
                     "TrajectorySummary", "trajectory_summary", "PromptSummary",
                     "summarize_prompts", "PromptMedians", "median_over_tokens"],
        "growth": ["variance_share", "per_prompt_variance_share"],
        "last_token": ["distinct_last_tokens"],
        "lens": ["PromptLike", "LensReadout", "readout_from_logits", "lens_readouts",
                 "lens_entropy", "decode_top", "entropy_spread", "top_text", "entropy",
                 "total_variation", "tv_to_token"],
        "regularity": ["Score", "SCORES", "Regularity", "trajectory_regularity", "alpha_profiles",
                       "per_prompt", "series"],
        "shape": ["Metric", "norms", "line_shape_score", "equidistance", "layerwise_alpha",
                  "expodistance", "windowed", "windowed_line_shape_score",
                  "windowed_equidistance"],
    },
)
