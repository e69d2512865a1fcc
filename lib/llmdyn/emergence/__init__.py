"""Chapter 08: how coupling and trajectory shape emerge over a training run (paper A §5.3).

Each checkpoint's profile, the late-slope rule for persistence, the suite's tables, and the
claims over runs (`over_runs`: one number per run, then the interval over runs). The runs
themselves come from ``llmdyn.training``.

May import: ``phases``, ``coupling``, ``trajectories``, ``training`` and everything below them.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["over_runs", "persistence", "profiles", "suite_summary"],
    submod_attrs={
        "profiles": ["CheckpointProfile", "measure_checkpoint", "measure_checkpoints",
                     "half_rise_step", "RunSeries", "run_series", "spread_steps", "depths_at",
                     "measure_suite"],
        "persistence": ["LATE_FRACTION", "late_window", "late_slope", "late_measure",
                        "RunTrend", "run_trend", "interval_cell",
                        "persistence_claim", "trend_table", "peak_sentence"],
        "suite_summary": ["suite_table", "EmergenceTiming", "emergence_timing",
                          "adjacent_over_distant"],
        "over_runs": ["run_means", "emergence_claim", "falls_claims", "timing_lag", "run_lags",
                      "timing_claims", "direction_claim", "run_locality", "locality_claims",
                      "suite_stand_in", "on_suite", "size_of", "one_size", "size_trend"],
    },
)
