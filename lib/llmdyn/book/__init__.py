"""The book's content: chapter parameters, figures on pages, the gallery, build facts and times.

The machinery that runs it (papermill, Snakemake, SLURM, the kernel) is `llmdyn.runner`.

May import: everything but ``runner`` and ``cli``; imported by ``runner``.
"""
