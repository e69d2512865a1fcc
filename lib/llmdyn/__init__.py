"""llmdyn: hidden-state dynamics of language models (trajectories, block Jacobians, coupling)."""

__version__ = "0.1.0"


class LlmdynError(ValueError):
    """The one exception class of the project: bad input, with what was got and what to do."""
