"""The book's stylesheet reaches _static/, and the packaged models are named with their type."""

from llmdyn.book.static import copy_static, model_descriptions
from llmdyn.core.paths import REPO


def test_the_stylesheet_is_copied_where_jupyter_book_serves_it(tmp_path):
    (tmp_path / "book" / "static").mkdir(parents=True)
    css = (REPO / "book" / "static" / "llmdyn.css").read_text()
    (tmp_path / "book" / "static" / "llmdyn.css").write_text(css)
    static = copy_static(tmp_path)
    assert static == tmp_path / "_static"
    assert (static / "llmdyn.css").read_text() == css
    assert ".chip-holds" in css and ".chip-stand-in" in css  # every chip's colour is there


def test_packaged_models_are_described_with_their_4_bit_type():
    assert model_descriptions() == {"smollm2-135m": "SmolLM2-135M-Instruct, 4-bit GGUF Q4_1",
                                    "gemma3-270m": "Gemma-3-270M base, 4-bit GGUF Q4_K_M"}
