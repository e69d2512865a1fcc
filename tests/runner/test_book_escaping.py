"""A checkpoint's vocabulary and a model's directory name reach the book as text, never as markup.

Chapters 03 and 05 run at smoke size on a tiny Llama saved in a directory whose name holds an
``<img onerror>``; its tokenizer has extra tokens that are HTML and Markdown (a script, an image
with a handler, a ``javascript:`` link), whose unembedding rows are long enough that they lead the
logit lens. The book (those two chapters, the scorecard, the gallery and the landing page) is
built with warnings as errors and read in headless Chromium: every page shows the strings as
literal text, and no element or attribute of the page comes from them.
"""

from __future__ import annotations

import shutil

import pytest
import torch
import yaml

from llmdyn.runner.build import REPO, build_html, run_chapter, stage

pytestmark = pytest.mark.slow

CHAPTERS = ("03_uncertainty", "05_depth_coupling")
DIRECTORY = "x<img src=x onerror=alert(1)>"
TOKENS = ("<img src=x onerror=alert(2)>", "<script>alert(3)</script>",
          "<a href=javascript:alert(4)>j</a>", "[j](javascript:alert(5))")
PAGES = ("book/executed/03_uncertainty.html", "book/executed/05_depth_coupling.html",
         "book/scorecard.html", "book/gallery.html", "book/intro.html")

# Every element of a page whose markup came from the strings above: a handler or a
# javascript: URL on any element, an image whose source is "x", or a script that is a payload's
# (its code is an alert) or holds one unescaped (a script of the page may carry the strings as
# data, escaped, as the scorecard's interactive table does).
FROM_THE_DATA = """
const found = [];
for (const el of document.querySelectorAll('*')) {
  for (const a of el.attributes) {
    if (a.name.startsWith('on') && a.value.includes('alert(')) found.push(el.outerHTML);
    if (/^\\s*javascript:/i.test(a.value)) found.push(el.outerHTML);
  }
  if (el.tagName === 'IMG' && el.getAttribute('src') === 'x') found.push(el.outerHTML);
  if (el.tagName === 'SCRIPT' && (/^\\s*alert\\(/.test(el.textContent)
      || el.textContent.includes('<img src=x') || el.textContent.includes('<script>alert')))
    found.push(el.outerHTML);
}
return found.map(s => s.slice(0, 200));
"""


def hostile_checkpoint(parent):
    """A tiny Llama whose extra tokens are markup, saved under a directory named with markup."""
    from llmdyn.models.loading import load_model

    model = load_model("tiny-llama")
    tokenizer, hf = model.tokenizer, model.hf
    tokenizer.add_tokens(list(TOKENS))
    hf.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    unembed = hf.lm_head.weight  # [vocab, d_model]
    with torch.no_grad():  # rows 20x the others' mean norm: these tokens lead at most positions
        scale = 20 * unembed[: -len(TOKENS)].norm(dim=1).mean() / unembed.shape[1] ** 0.5
        seeded = torch.Generator().manual_seed(0)
        rows = torch.randn(len(TOKENS), unembed.shape[1], generator=seeded)  # [token, d_model]
        unembed[-len(TOKENS):] = scale * rows
    out = parent / DIRECTORY
    hf.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def partial_book(out):
    """A staged book with only CHAPTERS of the chapters (the scorecard pastes only theirs)."""
    root = stage(out)
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    for part in toc["parts"]:
        part["chapters"] = [c for c in part["chapters"] if not c["file"].startswith(
            "book/executed/") or c["file"].rsplit("/", 1)[-1] in CHAPTERS]
    (root / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    # a chapter's link to one this book leaves out ({doc}`04_…` in 05) is no warning here
    config = yaml.safe_load((root / "_config.yml").read_text())
    sphinx = config.setdefault("sphinx", {}).setdefault("config", {})
    sphinx["suppress_warnings"] = [*sphinx.get("suppress_warnings", []), "ref.doc"]
    (root / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    for part in (root / "book" / "scorecard_parts").glob("*.md"):
        named = {line.split("executed/")[1][:len("00_x")] for line in part.read_text().splitlines()
                 if "executed/" in line}
        if named - {c[:4] for c in CHAPTERS}:
            part.write_text(f"{part.stem} is not in this book.\n")
    return root


@pytest.fixture(scope="module")
def hostile_book(tmp_path_factory):
    """Chapters 03 and 05 run on the hostile checkpoint, then the HTML (warnings as errors)."""
    model = hostile_checkpoint(tmp_path_factory.mktemp("models"))
    root = partial_book(tmp_path_factory.mktemp("book"))
    for name in CHAPTERS:
        parameters = yaml.safe_load((REPO / "tests" / "smoke" / f"{name}.yaml").read_text())
        parameters.update(model=str(model), compare_models=[])
        run_chapter(name, root / "book" / "executed", parameters, cwd=root)
    yield build_html(root)
    shutil.rmtree(model.parent, ignore_errors=True)


def read_page(session, page) -> tuple[list[str], str]:
    """(what on the page came from the data, the page's text); an alert that fires is found."""
    from selenium.common.exceptions import UnexpectedAlertPresentException

    from tests.browser import open_page

    ran, loaded = [], False
    for _ in range(50):  # an alert interrupts the command that meets it (and is dismissed)
        try:
            if not loaded:
                loaded = True
                open_page(session, page, wait_for="main")
            found = session.execute_script(FROM_THE_DATA)
            return ran + found, session.execute_script("return document.body.textContent")
        except UnexpectedAlertPresentException as alert:
            ran.append(f"a script ran: alert({alert.alert_text})")
    raise AssertionError(f"{page} keeps raising alerts: {ran}")


def test_markup_from_a_checkpoint_renders_as_text_in_chromium(hostile_book):
    from tests.browser import chromium

    found, shown = {}, {}
    with chromium() as session:
        for page in PAGES:
            found[page], shown[page] = read_page(session, hostile_book / page)
    assert not any(found.values()), {page: f for page, f in found.items() if f}
    # the strings are on the pages, as the text they are
    for page in PAGES:
        assert DIRECTORY in shown[page], page
    chapter03 = shown["book/executed/03_uncertainty.html"]
    assert sum(token in chapter03 for token in TOKENS) >= 2, [t for t in TOKENS if t in chapter03]
