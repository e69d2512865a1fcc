"""The book: chapter parameters, papermill runs, the Snakemake workflow, figures and gallery.

May import: everything; nothing imports it but ``cli``.
"""
