"""tools/notebook_metrics.py counts code, logic and Claim( lines as its docstring defines them."""

from __future__ import annotations

import nbformat

from tools.notebook_metrics import count_notebook, unresolved_exports

CELLS = [
    ("parameters", "model = 'x'\nn = 3 * 4\n"),  # the parameters cell is not counted
    ("code", "# a comment\n\nfrom llmdyn.claims import Claim as C\nfrom llmdyn import claims\n"),
    ("code", "values = [v * 2 for v in range(3)]\nresult = f(values)\n"
             "if result:\n    show(result)\n"),
    ("code", "table = {'a': 1,\n         'b': 2}\nc1 = C('x')\nc2 = claims.Claim('y')\nK = C\n"
             "c3 = K('z')\n"),
]


def _notebook(tmp_path):
    nb = nbformat.v4.new_notebook()
    for kind, source in CELLS:
        tags = ["parameters"] if kind == "parameters" else []
        nb.cells.append(nbformat.v4.new_code_cell(source, metadata={"tags": tags}))
    path = tmp_path / "99_example.ipynb"
    nbformat.write(nb, path)
    return path


def test_the_counts_follow_the_definitions(tmp_path):
    count = count_notebook(_notebook(tmp_path))
    # code lines: 2 imports + 4 + 6 (the dict spans 2); the comment and blank line are not code
    assert count.code_lines == 12
    # logic: the comprehension, the `if`, both lines of the two-key dict
    assert count.logic_lines == 4
    # Claim( under its alias, through the module, and through a second name bound to the class
    assert count.claim_calls == 3


def test_every_exported_name_of_the_library_resolves():
    assert unresolved_exports() == []
