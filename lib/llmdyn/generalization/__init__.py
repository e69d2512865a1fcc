"""Chapter 09: coupling against generalization across independent models (paper A §5.4).

Published model facts joined with the leaderboard, the population of final models trained here,
and what that population can show at its scale (reference losses, power).

May import: ``sweep``, ``coupling``, ``training`` and everything below them.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["population", "published", "scale"],
    submod_attrs={
        "published": ["SHAPES_CSV", "model_facts", "bits_per_byte", "fit_or_reason",
                      "subset_table", "k_table", "coupling_and_bits", "facts_table"],
        "population": ["MEASURES", "SIZE_AND_SHAPE", "coupling_scores", "finals",
                       "measure_models", "population_frame", "single_fits", "Advantage",
                       "correlation_advantage", "partial_coefficient", "population_markdown",
                       "fits_markdown"],
    },
)
