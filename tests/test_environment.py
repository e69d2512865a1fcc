"""What `make setup` leaves out of the environment, and why it matters to every chapter run."""

import subprocess
import sys


def test_reading_a_notebook_builds_no_grammar_and_still_validates():
    # jsonschema imports rfc3987-syntax whenever it is installed, and that import compiles a
    # Lark grammar: 2.3 CPU-s in each chapter's kernel (myst-nb's glue) and in each papermill
    # process. The Makefile's setup uninstalls it; notebooks are still validated by jsonschema.
    code = ("import sys, nbformat; nbformat.validate(nbformat.v4.new_notebook()); "
            "print(sorted(m for m in ('lark', 'rfc3987_syntax') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]", (
        "rfc3987-syntax is installed: run `.venv/bin/pip uninstall -y rfc3987-syntax` "
        "(the Makefile's setup does)")
