"""The book as one PDF: Jupyter Book's LaTeX builder, typeset by xelatex (``make pdf``).

xelatex, not pdflatex: the pages use ‖, m̃ and ≤, which pdflatex's fonts cannot set, while
xelatex sets them from the FreeFont family. The chapters are the executed notebooks the HTML
build renders; nothing is executed here. The PDF is also copied beside the HTML book
(``_build/html/book.pdf``), where the intro links it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from llmdyn import LlmdynError
from llmdyn.runner.build import refuse_unfinished, write_generated

#: the Debian packages the LaTeX build needs; `make pdf` installs them when run as root
PACKAGES = ("texlive-xetex", "texlive-latex-extra", "texlive-fonts-recommended",
            "fonts-freefont-otf", "latexmk", "xindy")
TOOLS = ("xelatex", "latexmk")  # what the build calls
PDF_NAME = "book.pdf"  # _config.yml's latex.latex_documents.targetname, as .pdf


def missing_tools() -> list[str]:
    """The LaTeX programs of `TOOLS` that are not on PATH."""
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def build_pdf(book_root: Path) -> Path:
    """Build ``<book_root>/_build/latex/book.pdf`` and copy it to ``_build/html/book.pdf``.

    The generated pages (gallery, build facts, scorecard) are written first, as for the HTML
    book, and a chapter that did not finish is refused. Returns the PDF's path.
    """
    if missing := missing_tools():
        raise LlmdynError(f"the PDF needs {' and '.join(missing)}: run  sudo apt-get install -y "
                          f"{' '.join(PACKAGES)}  (`make pdf` run as root installs them)")
    refuse_unfinished(book_root)
    write_generated(book_root)
    pdf = book_root / "_build" / "latex" / PDF_NAME
    pdf.unlink(missing_ok=True)  # a PDF left by an earlier build is never taken for this one
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    result = subprocess.run([str(jupyter_book), "build", str(book_root), "--builder", "pdflatex"],
                            capture_output=True, text=True)
    if result.returncode != 0 or not pdf.is_file():
        log = pdf.with_suffix(".log")
        raise LlmdynError(f"the PDF build failed (LaTeX's log: {log}):\n{result.stdout[-3000:]}\n"
                          f"{result.stderr[-3000:]}")
    html = book_root / "_build" / "html"
    html.mkdir(parents=True, exist_ok=True)
    shutil.copy2(pdf, html / PDF_NAME)
    return pdf
