"""llmdyn: hidden-state dynamics of language models (trajectories, block Jacobians, coupling).

The names a notebook session uses most, at the top, each loaded on first use::

    import llmdyn as ld
    model = ld.load_model("smollm2-135m")
    states = ld.trajectory(model, "What is the capital of France? The capital is")
    J = ld.block_jacobians(model, "The capital of France is", layers=[3, 4])
    coupling = ld.depth_coupling(model, ["The capital of France is"], k=10)
    logits = ld.logit_lens(model, states.states)

Everything else lives in the subpackages (``ld.coupling``, ``ld.phases``, ``ld.claims``, …),
which load lazily too. Nothing here imports torch or a subpackage at ``import llmdyn``: the
table below is read by `lazy_loader` on attribute access, and by
`llmdyn.core.closure` only for the names a piece of code actually uses, so a result's code
hash never grows by this facade.
"""

import lazy_loader

__version__ = "0.1.0"


class LlmdynError(ValueError):
    """The one exception class of the project: bad input, with what was got and what to do."""


__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["claims", "core", "coupling", "data", "emergence", "generalization",
                "jacobians", "models", "phases", "plots", "stats", "sweep", "training",
                "trajectories", "vision"],
    submod_attrs={
        # a model: load it, its shape, and the offline names
        "models.loading": ["load_model", "known_models", "model_shape", "LoadedModel"],
        # one prompt through the blocks: the trajectory x^0 … x^L and paper B's logit lens
        "trace": ["trajectory", "Trajectory", "logit_lens"],
        # block Jacobians J^l_{t1 t2} and their SVD
        "jacobians.full": ["block_jacobians"],
        "jacobians.last_token": ["last_token_jacobians"],
        "jacobians.svd": ["svd_sorted"],
        # coupling: A = U^T J V on the top-K singular vectors, across depth and across tokens
        "coupling.matrix": ["coupling_matrix"],
        "coupling.scores": ["miscoupling", "diagonal_share"],
        "coupling.depth": ["depth_coupling", "DepthCoupling"],
        "coupling.tokens": ["token_coupling"],
        # trajectory shape: norms, LSS, equidistance (paper A §3.2, paper B §4)
        "trajectories.shape": ["norms", "line_shape_score", "equidistance", "expodistance"],
        "trajectories.lens": ["lens_entropy"],
        # prompts that ship offline
        "data.squad": ["squad_prompts", "question_texts"],
    },
)
