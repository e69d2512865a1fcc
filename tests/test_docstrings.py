"""One shape notation in the library's docstrings and comments: ``[layer, tok, d_model]``.

A shape written in parentheses, ``(layer, tok, d_model)`` or ``(n, d)``, reads as a call or a
tuple of values; STYLE.md (habits 2 and 17) asks for square brackets with the axis names.
"""

import ast
import io
import re
import tokenize

import pytest

from llmdyn.core.paths import REPO

LIB = REPO / "lib" / "llmdyn"

# Axis names (the shape vocabulary), single letters and n_/d_/k_ sizes; a shape holds one of
# the core names, so a pair such as (x, y), (lo, hi) or (i, j) is not taken for a shape.
_WORD = (r"layers?|tok|tokens?|prompts?|d_model|d_mlp|d_ff|d_head|head_dim|heads|kv_heads|vocab"
         r"|batch|draws?|seq|seq_len|items?|resamples?|ckpt|pairs?|window|centre|channels|height"
         r"|width|patches|classes|n_classes|units?|samples?|blocks?|cells?|columns?|replicates?"
         r"|images?|vits?|points?|runs?")
_CORE = rf"(?:{_WORD}|[ndkm]|\.\.\.)"
_NAME = rf"(?:{_WORD}|[A-Za-z]|[ndk]_\w+|\w+_dim)"
_ITEM = rf"(?:\.\.\.|\d+|{_NAME}(?:\s?[+\-−*·×]\s?(?:\d+|{_NAME}))?['′]?)"
_SEP = r"\s*,\s*"
# two or more items, or one with a trailing comma; not right after a name (a call, f(n, d))
PAREN_SHAPE = re.compile(
    rf"(?<![\w.])\((?=[^()\[\]]*?(?<![\w.]){_CORE}(?!\w))"
    rf"{_ITEM}(?:{_SEP}{_ITEM})*(?:{_SEP}{_ITEM}|\s*,)\s*\)")


@pytest.mark.parametrize("text", [
    "(layers, tokens, d_model)", "(layer, tok, d_model)", "of shape ``(n, d)``", "(layer+1,)",
    "# (prompt, layer, layer)", "(tok-1, vocab)", "(..., k, k)", "(n, 1, 28, 28)", "(..., 2)",
    "(layer*d, layer*k)", "(cell,)",
    "(batch, seq_len + 1)", "(tok, layer')", "(d_model,)", "(b, heads, tok, head_dim)",
])
def test_the_pattern_finds_a_shape_in_parentheses(text):
    assert PAREN_SHAPE.search(text), text


@pytest.mark.parametrize("text", [
    "[layer, tok, d_model]", "(x, y)", "(lo, hi)", "(i, j)", "(t1, t2)", "f(n, d)",
    "np.zeros(n, d)", "(prompts, models, runs, seeds)", "(see chapter 3, Fig 2)",
    "(paper A §3.4, Figs 6, 10)", "F(k − 1, N − k)", "(kind, n, method)", "(n, ½)",
    "(the mean, as in Levene's test)", "(prompt, return_tensors='pt')", "(layer)",
])
def test_the_pattern_leaves_other_parentheses(text):
    assert not PAREN_SHAPE.search(text), text


def docstrings_and_comments(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every docstring (module, class, function) and comment."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                found.append((node.body[0].lineno, doc))
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found.append((token.start[0], token.string))
    return found


def test_docstrings_and_comments_are_read():
    source = '"""Module (layer, k)."""\n\ndef f():\n    """F."""\n    return 1  # [tok]\n'
    assert docstrings_and_comments(source) == [(1, "Module (layer, k)."), (4, "F."),
                                               (5, "# [tok]")]


def test_shapes_are_written_in_square_brackets():
    found = []
    for path in sorted(LIB.rglob("*.py")):
        name = path.relative_to(LIB).as_posix()
        for line, text in docstrings_and_comments(path.read_text()):
            for match in PAREN_SHAPE.finditer(text):
                # line: where the docstring or comment starts
                found.append(f"lib/llmdyn/{name}:{line}: {match.group()}")
    assert not found, "write shapes as [a, b, c]:\n" + "\n".join(found)
