"""The standalone measurement job (``job``: one model in, one result file out), results joined.

May import: ``coupling``, ``models``, ``data`` and everything below them.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["job", "join"],
    submod_attrs={
        "join": ["LEADERBOARD_CSV", "SCORE_COLUMNS", "LeaderboardRow", "leaderboard",
                 "leaderboard_score", "SweepTable", "sweep_table", "check_regression"],
        "job": ["FORMAT", "MeasureParams", "CouplingResult", "result_path", "measure_coupling",
                    "check_out", "write_result", "read_result", "read_results"],
    },
)
