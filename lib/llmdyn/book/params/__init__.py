"""Typed notebook parameters: papermill injects values, these dataclasses check them.

A chapter's setup cell reads its parameters cell with ``XParams.from_cell(globals())``: every
field is taken from the cell, each value is checked against its type hint and the bounds its
field declares (:mod:`llmdyn.core.declared`), and a name the chapter does not take
(``papermill -p kk 3``) is an error rather than a warning. ``base`` holds the shared fields and
the resolution for a model (``for_model``, a new frozen instance), ``chapters`` and ``trained``
one class per chapter (each parameter declared there, once: default, doc, bounds), ``cell``
writes a chapter's parameters cell from its class, ``relative`` the defaults relative to the
model (the blocks, the window) and ``resolution`` reads the models' configs and resolves once.

May import: ``models`` (loading in ``resolution`` only; ``base`` reads the packaged
models' names), ``data``, ``phases.split``, ``coupling.default_k`` (k's rule) and ``core``.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["base", "cell", "chapters", "relative", "resolution", "trained"],
    submod_attrs={
        "base": ["ChapterParams", "CompareParams", "QuestionParams", "Resolution"],
        "chapters": ["DepthCouplingParams", "UncertaintyParams", "JacobianAlignmentParams",
                     "SpectraPromptsParams", "TrajectoriesParams", "GeometryAlongDepthParams",
                     "TokenCouplingParams", "RegularityParams"],
        "trained": ["TrainingParams", "GeneralizationParams", "VitParams"],
        "cell": ["parameters_cell", "field_docs"],
        "relative": ["relative_blocks", "relative_pair", "relative_k", "relative_window",
                     "same_fraction"],
        "resolution": ["resolve"],
    },
)
