"""Chapter 08: how coupling and trajectory shape emerge over a training run (paper A §5.3).

Each checkpoint's profile, the second-half rule for persistence, and the suite's tables and
timing claims. The runs themselves come from ``llmdyn.training``.

May import: ``phases``, ``coupling``, ``trajectories``, ``training`` and everything below them.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["persistence", "profiles", "suite_summary"],
    submod_attrs={
        "profiles": ["CheckpointProfile", "measure_checkpoint", "measure_checkpoints",
                     "half_rise_step", "RunSeries", "run_series", "spread_steps", "depths_at",
                     "measure_suite"],
        "persistence": ["MIN_RHO", "second_half", "late_slope", "late_measure",
                        "LateTrendRule", "RunTrend", "run_trend",
                        "persistence_claim", "trend_table", "peak_sentence"],
        "suite_summary": ["suite_table", "EmergenceTiming", "emergence_timing", "endpoints"],
    },
)
