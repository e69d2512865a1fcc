"""Paper B's Thought and Fixation phases: boundary estimates, splits of depth, contrasts.

May import: ``coupling``, ``trajectories`` and everything below them.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["changepoints", "contrast", "curves", "measure", "split"],
    submod_attrs={
        "changepoints": ["ChangePoint", "step_changepoint", "hinge_changepoint", "lss_peak_layer",
                         "lss_peak_fit", "entropy_spread_layer", "entropy_spread_fit",
                         "norm_velocity_layer", "norm_velocity_fit"],
        "contrast": ["Phase", "PAPER_TABLE1", "pair_phase_means", "AlignmentMeans",
                     "alignment_means", "table1_claims", "contrast_claims", "lens_refusals",
                     "saturated_lens", "unless_saturated"],
        "curves": ["SATURATED_NATS", "Saturation", "lens_saturation", "phase_means_per_prompt",
                   "phase_deviations", "per_prompt_values",
                   "spread_ratio", "peak_position", "fraction_in_band",
                   "rising_fraction", "velocity_change", "relative_velocity_change",
                   "relative_velocity_changes",
                   "velocity_gain_over", "alignment_profile", "most_aligned_position",
                   "profile_correlation", "row_correlations"],
        "measure": ["measure_boundary"],
        "split": ["CRITERIA", "SPLITS", "PhaseSplit", "as_split", "window_that_fits",
                  "PhaseBoundary", "estimate_boundary", "agree"],
    },
)
