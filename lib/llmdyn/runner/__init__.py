"""The machinery that runs the book: papermill, the Snakemake workflow, SLURM, the kernel, the lab.

``build`` runs a chapter with papermill and builds the HTML (`llmdyn book`); ``workflow`` runs
Snakemake (`llmdyn workflow`) on the ``targets`` it checks, with ``sources`` and ``digest`` deciding
what a chapter depends on, ``conversion`` the convert job, ``records`` the record a chapter
job leaves for the chapters that wait on it, ``runlock``, ``signals`` and
``slurm`` keeping runs safe; ``kernel`` encrypts the kernel's sockets; ``lab`` opens JupyterLab.
The book's content (parameters, figures, gallery, build facts) is in `llmdyn.book`.

May import: everything; nothing imports it but ``cli``.
"""
