"""Typed notebook parameters: papermill injects values, these dataclasses check them.

A chapter's setup cell reads its parameters cell with ``XParams.from_cell(globals())``: every
field is taken from the cell, each value is checked against its type hint and its bounds, and a
name the chapter does not take (``papermill -p kk 3``) is an error rather than a warning.
``base`` holds the shared checks, ``chapters`` and ``trained`` one class per chapter, ``cell``
writes a chapter's parameters cell from its class (each parameter is documented there, once),
``relative`` the defaults relative to the model (blocks, k) and ``resolution`` sets them from the
models' configs.

May import: ``models`` (loading in ``resolution`` only; ``base`` reads the packaged
models' names), ``data``, ``phases.split`` and ``core``.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["base", "cell", "chapters", "relative", "resolution", "trained"],
    submod_attrs={
        "base": ["ChapterParams", "CompareParams", "QuestionParams"],
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
