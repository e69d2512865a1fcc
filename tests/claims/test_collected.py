from __future__ import annotations

import json

from llmdyn.claims.collected import read_chapter


def _glued(name: str, value: str) -> dict:
    """A code-cell output as myst_nb.glue stores it (scrapbook metadata, text/plain repr)."""
    return {"output_type": "display_data", "data": {"text/plain": repr(value)},
            "metadata": {"scrapbook": {"name": name, "mime_prefix": ""}}}


def test_a_chapter_s_to_decide_names_the_chapter_in_its_commands(tmp_path):
    record = {"id": "c", "paper": "A", "section": "§", "statement": "s", "paper_value": "p",
              "grade": "inconclusive", "reason": "", "number": "1", "result": "r", "rule": "x",
              "to_decide": "n = 40 prompts; `llmdyn workflow --only <chapter> --config "
                           "chapter_params=DIR`"}
    nb = {"metadata": {"papermill": {"parameters": {"model": "m-a"}}}, "nbformat": 4,
          "nbformat_minor": 5,
          "cells": [{"cell_type": "markdown", "source": "# Title\n\n## Claims", "metadata": {}},
                    {"cell_type": "code", "source": "publish(claims)", "metadata": {},
                     "outputs": [_glued("scorecard", "<table></table>"),
                                 _glued("claims", json.dumps([record]))]}]}
    path = tmp_path / "05_depth_coupling.ipynb"
    path.write_text(json.dumps(nb))
    (published,) = read_chapter(path)
    assert published.records[0].to_decide == (
        "n = 40 prompts; `llmdyn workflow --only 05_depth_coupling --config chapter_params=DIR`")
