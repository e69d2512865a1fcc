"""The book as one PDF: xelatex, the packages `make pdf` installs, and the file it builds."""

import re
from pathlib import Path

import pytest
import yaml

from llmdyn import LlmdynError
from llmdyn.runner import pdf
from llmdyn.runner.build import REPO


def test_make_pdf_installs_the_packages_the_build_names():
    makefile = (REPO / "Makefile").read_text()
    listed = re.search(r"^PDF_PACKAGES := (.+)$", makefile, re.MULTILINE)
    assert listed and tuple(listed.group(1).split()) == pdf.PACKAGES


def test_the_config_typesets_with_xelatex_under_the_name_the_build_reads():
    latex = yaml.safe_load((REPO / "_config.yml").read_text())["latex"]
    assert latex["latex_engine"] == "xelatex"  # pdflatex cannot set ‖, m̃ or ≤
    assert latex["latex_documents"]["targetname"].removesuffix(".tex") + ".pdf" == pdf.PDF_NAME


def test_a_machine_without_xelatex_is_told_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr(pdf.shutil, "which", lambda tool: None)
    with pytest.raises(LlmdynError, match=r"needs xelatex and latexmk: run  sudo apt-get install "
                                          r"-y texlive-xetex .* xindy"):
        pdf.build_pdf(tmp_path)


def test_the_pdf_that_make_pdf_built(request):
    """Run by `make pdf` after its build (``--pdf .``); `make test` has no PDF to read."""
    root = request.config.getoption("--pdf")
    if root is None:
        pytest.skip("the PDF's check runs in `make pdf`, after the LaTeX build it checks")
    built = Path(root) / "_build" / "latex" / pdf.PDF_NAME
    data = built.read_bytes()
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
    assert (Path(root) / "_build" / "html" / pdf.PDF_NAME).read_bytes() == data  # the intro's link
    written = re.search(r"Output written on .*\((\d+) pages", built.with_suffix(".log").read_text())
    assert written and int(written.group(1)) > 50, "the book has eleven chapters and five pages"
