"""Figures as data: captions and vector files, the gallery generator, the build facts."""

import datetime as dt
import re
import shutil

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import pytest  # noqa: E402

from llmdyn import LlmdynError, __version__  # noqa: E402
from llmdyn.book import buildfacts, figure_files, gallery
from llmdyn.book.figure_files import (
    chapter_figures,
    copy_vector_files,
    named_figure_files,
    publish_chapter_figures,
    replace_figure_folder,
)
from llmdyn.data import figures
from llmdyn.plots import output  # noqa: E402
from llmdyn.runner.build import REPO, chapters  # noqa: E402

SHOWN = re.compile(r'plots\.show\("([^"]+)"')


def shown_bundle(monkeypatch, name):
    """What ``plots.show(name)`` hands to IPython's display: (bundle, metadata)."""
    seen = []
    monkeypatch.setattr(output, "display",
                        lambda obj, raw, metadata: seen.append((obj, metadata)))
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    output.show(name, fig)
    assert len(seen) == 1 and not plt.get_fignums()  # shown once, and closed
    return seen[0]


def executed_chapter(tmp_path, chapter, outputs, cell_id="cell-04"):
    cell = nbformat.v4.new_code_cell('plots.show("x")', id=cell_id)
    cell.outputs = outputs
    nb = nbformat.v4.new_notebook(cells=[cell])
    nbformat.write(nb, tmp_path / f"{chapter}.ipynb")
    return tmp_path / f"{chapter}.ipynb"


def display_output(bundle, metadata):
    return nbformat.v4.new_output("display_data", data=bundle, metadata=metadata)


def test_show_displays_png_svg_and_a_caption_naming_the_paper_figure(monkeypatch):
    bundle, metadata = shown_bundle(monkeypatch, "coupling-grid")
    assert set(bundle) == {"image/png", "image/svg+xml", "text/plain"}
    svg = bundle["image/svg+xml"]
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert bundle["text/plain"].startswith("Regenerates Paper A, Fig 3: Coupling matrices")
    assert metadata == {output.METADATA_KEY: {"name": "coupling-grid"}}


def test_show_refuses_an_unregistered_name():
    with pytest.raises(LlmdynError, match="not in data/book_figures.csv"):
        output.show("no-such-figure")


URL = "https://example.org/r/blob/main"


def publish(executed, chapter, path=None):
    """What a chapter's run does once it finished: publish its figures, then put them in place."""
    staged = publish_chapter_figures(path or executed / f"{chapter}.ipynb", chapter, executed, URL)
    return replace_figure_folder(staged, chapter, executed)


def test_publish_writes_the_vector_file_and_captions_with_paper_figure_and_cell(monkeypatch,
                                                                                tmp_path):
    bundle, metadata = shown_bundle(monkeypatch, "coupling-grid")
    path = executed_chapter(tmp_path, "05_depth_coupling",
                            [display_output(bundle, metadata)] * 2)  # a cell that loops
    folder = publish(tmp_path, "05_depth_coupling")
    assert folder == tmp_path / "figures" / "05_depth_coupling"
    assert sorted(p.name for p in folder.iterdir()) == [
        "coupling-grid-2.png", "coupling-grid-2.svg", "coupling-grid.png", "coupling-grid.svg"]
    assert "<svg" in (folder / "coupling-grid.svg").read_text()
    assert (folder / "coupling-grid.png").stat().st_size > 0
    md = [o.data["text/markdown"] for o in nbformat.read(path, as_version=4).cells[0].outputs]
    assert md[0].startswith(":::{figure} figures/05_depth_coupling/coupling-grid.png\n"
                            ":name: fig-coupling-grid\n")
    assert ":name: fig-coupling-grid-2" in md[1]
    # a width (the PNG's own: matplotlib's default 6.4 in at 100 dpi) makes Sphinx link the image
    # to its full size and never draw it wider than drawn
    assert ":name: fig-coupling-grid\n:width: 640px\n" in md[0]
    assert "**Regenerates Paper A, Fig 3.**" in md[0] and "cell `cell-04`" in md[0]
    assert "(https://example.org/r/blob/main/notebooks/05_depth_coupling.ipynb)" in md[0]
    assert "{download}`coupling-grid.svg <figures/05_depth_coupling/coupling-grid.svg>`" in md[0]
    html = nbformat.read(path, as_version=4).cells[0].outputs[0].data["text/html"]
    assert html.startswith('<figure><img src="data:image/png;base64,' + bundle["image/png"])
    assert "<strong>Regenerates Paper A, Fig 3.</strong>" in html and "cell-04" in html
    assert named_figure_files(tmp_path, "05_depth_coupling") == [
        folder / "coupling-grid.png", folder / "coupling-grid.svg",
        folder / "coupling-grid-2.png", folder / "coupling-grid-2.svg"]


def test_png_width_reads_the_header_and_refuses_what_is_not_a_png():
    import io
    fig = plt.figure(figsize=(3.1, 1), dpi=100)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    assert figure_files.png_width(buf.getvalue()) == 310
    with pytest.raises(LlmdynError, match="not a PNG image"):
        figure_files.png_width(b"<svg/>" + bytes(30))


def test_a_run_replaces_the_figure_folder_with_what_it_drew(monkeypatch, tmp_path):
    # A figure the earlier run drew (for another model) must not survive the next run
    grid, grid_meta = shown_bundle(monkeypatch, "coupling-grid")
    compare, compare_meta = shown_bundle(monkeypatch, "coupling-compare")
    executed_chapter(tmp_path, "05_depth_coupling", [display_output(grid, grid_meta),
                                                     display_output(compare, compare_meta)])
    folder = publish(tmp_path, "05_depth_coupling")
    assert (folder / "coupling-compare.png").exists()
    # the next run writes its notebook under a temporary name, and draws no comparison
    partial = executed_chapter(tmp_path, ".05_depth_coupling.1.partial",
                               [display_output(grid, grid_meta)])
    publish(tmp_path, "05_depth_coupling", partial)
    assert sorted(p.name for p in folder.iterdir()) == ["coupling-grid.png", "coupling-grid.svg"]
    assert [p.name for p in (tmp_path / "figures").iterdir()] == ["05_depth_coupling"]


def test_a_figure_file_from_another_run_or_missing_is_refused(monkeypatch, tmp_path):
    bundle, metadata = shown_bundle(monkeypatch, "coupling-grid")
    executed_chapter(tmp_path, "05_depth_coupling", [display_output(bundle, metadata)])
    with pytest.raises(LlmdynError, match="not captioned by its run .*run the chapter again"):
        named_figure_files(tmp_path, "05_depth_coupling")  # executed, never published
    folder = publish(tmp_path, "05_depth_coupling")
    (folder / "coupling-grid.png").write_bytes(b"another model's figure")
    with pytest.raises(LlmdynError, match="coupling-grid.png is from another run"):
        named_figure_files(tmp_path, "05_depth_coupling")
    (folder / "coupling-grid.png").unlink()
    with pytest.raises(LlmdynError, match="coupling-grid.png \\(or its .svg\\) is missing"):
        named_figure_files(tmp_path, "05_depth_coupling")


def test_the_html_gets_only_the_vector_files_the_chapters_name(monkeypatch, tmp_path):
    bundle, metadata = shown_bundle(monkeypatch, "coupling-grid")
    executed_chapter(tmp_path, "05_depth_coupling", [display_output(bundle, metadata)])
    publish(tmp_path, "05_depth_coupling")
    out = tmp_path / "html" / "figures"
    (out / "05_depth_coupling").mkdir(parents=True)
    (out / "05_depth_coupling" / "coupling-compare.svg").write_text("an earlier build's")
    copy_vector_files(tmp_path, ["05_depth_coupling"], out)
    assert [p.name for p in (out / "05_depth_coupling").iterdir()] == ["coupling-grid.svg"]


def test_not_drawn_says_why_on_the_page_and_in_the_notebook(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(output, "display", lambda obj, raw, metadata: seen.append((obj, metadata)))
    output.not_drawn("coupling-compare", "no compare model other than m was given")
    bundle, metadata = seen[0]
    assert bundle["text/markdown"] == (
        "**Not drawn.** Regenerates Paper A, Fig 20 (coupling-compare) is not drawn for this "
        "model: no compare model other than m was given")
    executed_chapter(tmp_path, "05_depth_coupling", [display_output(bundle, metadata)])
    shown = chapter_figures(tmp_path / "05_depth_coupling.ipynb")
    assert shown.drawn == {} and shown.not_drawn == {
        "coupling-compare": "no compare model other than m was given"}
    assert publish(tmp_path, "05_depth_coupling").is_dir()  # an empty folder: nothing drawn
    with pytest.raises(LlmdynError, match="give the reason"):
        output.not_drawn("coupling-compare", " ")


def test_publish_refuses_a_figure_shown_by_another_chapter(monkeypatch, tmp_path):
    bundle, metadata = shown_bundle(monkeypatch, "coupling-grid")
    executed_chapter(tmp_path, "07_regularity", [display_output(bundle, metadata)])
    with pytest.raises(LlmdynError, match="gives to chapter 05_depth_coupling"):
        publish(tmp_path, "07_regularity")


def test_caption_text_joins_papers_and_panels():
    assert figures.figure("self-coupling").paper_text() == "Paper A, Fig 4 and Fig 17 and Fig 21"
    assert figures.figure("trajectories").paper_text() == "Paper B, Fig 1; Paper A, Fig 12"
    assert figures.figure("growth-rates").paper_text() == "Not a figure of the papers"


def test_caption_says_what_kind_of_figure_it_is():
    # Only a figure that regenerates the paper's says "Regenerates".
    lead = {name: figures.figure(name).lead() for name in
            ("coupling-grid", "scores-and-shape", "coupling-definitions", "packaged-models",
             "growth-rates")}
    assert lead == {"coupling-grid": "Regenerates Paper A, Fig 3",
                    "scores-and-shape": "Stand-in for Paper A, Fig 31 and Fig 35",
                    "coupling-definitions": "Diagnostic, beside Paper A, Fig 1a",
                    "packaged-models": "Diagnostic, beside Paper A, Fig 1a",
                    "growth-rates": "Diagnostic, not a figure of the papers"}


def test_every_figure_has_a_kind_that_fits_its_paper_figures():
    status = {f.key: f.status for f in figures.paper_figures()}
    drawn = figures.book_figures().values()
    for fig in drawn:
        assert fig.kind in figures.KINDS, fig.name
        assert fig.paper or fig.kind == "diagnostic", fig.name
    # A paper figure marked regenerated is redrawn by a figure that says so, not only by a
    # diagnostic or a stand-in.
    for key in (k for k, s in status.items() if s == "regenerated"):
        assert any(f.kind == "regenerates" and any(re.fullmatch(rf"{key}[a-e]?", r)
                                                   for r in f.paper) for f in drawn), key


def test_a_figure_table_row_without_a_valid_kind_is_refused(tmp_path):
    for name in ("book_figures.csv", "paper_figures.csv"):
        shutil.copy(figures.DATA / name, tmp_path / name)
    table = tmp_path / "book_figures.csv"
    table.write_text(table.read_text().replace("growth-rates,07_regularity,,diagnostic",
                                               "growth-rates,07_regularity,,regenerates"))
    with pytest.raises(LlmdynError, match="kind must be one of"):
        figures.book_figures(tmp_path)


def test_every_figure_of_both_papers_is_listed_once():
    # Paper A (coupling.txt) has Figures 1-36, paper B (thought_fixation.txt) Figures 1-18.
    keys = [f.key for f in figures.paper_figures()]
    assert keys == [f"A {n}" for n in range(1, 37)] + [f"B {n}" for n in range(1, 19)]


def test_every_book_figure_is_shown_by_its_chapter_and_every_show_is_registered():
    registered = figures.book_figures()
    shown = {}
    for name in chapters():
        nb = nbformat.read(REPO / "notebooks" / f"{name}.ipynb", as_version=4)
        for cell in nb.cells:
            for fig in SHOWN.findall(cell.source):
                assert fig in registered, f"{name} shows unregistered {fig!r}"
                assert registered[fig].chapter == name, (fig, name)
                shown[fig] = name
    assert set(shown) == set(registered)


def test_gallery_rows_point_to_existing_chapters_and_absent_figures_give_a_reason(tmp_path):
    names = chapters()
    rows = gallery.gallery_rows(tmp_path, names)
    assert len(rows) == 54
    for row in rows:
        for fig in row.drawn:
            assert fig.chapter in names
            assert (REPO / "notebooks" / f"{fig.chapter}.ipynb").exists()
        if not row.drawn:
            assert row.figure.status in ("not offline", "not reproduced")
            assert len(row.figure.reason) > 20, row.figure.key
        assert row.thumbnail is None  # nothing was drawn in tmp_path


def _card(md, title):
    card = md[md.index(f":::{{grid-item-card}} {title}\n"):]
    return card[: card.index("\n:::\n")]


def test_gallery_card_has_thumbnail_and_figure_link_when_drawn(monkeypatch, tmp_path):
    bundle, metadata = shown_bundle(monkeypatch, "coupling-grid")
    executed_chapter(tmp_path, "05_depth_coupling", [display_output(bundle, metadata)])
    executed_chapter(tmp_path, "11_spectra_and_prompts",
                     [display_output(*shown_bundle(monkeypatch, "spectra-depth"))])
    md = gallery.gallery_markdown(tmp_path, chapters())
    assert md.count(":::{grid-item-card}") == 54
    card = _card(md, "Paper A, Fig 3")
    # a width makes Sphinx link the thumbnail to its full-size image
    assert ("```{image} executed/figures/05_depth_coupling/coupling-grid.png\n"
            ":alt: Paper A, Fig 3: Coupling across depth (blocks 9–16)\n:width: 100%\n```") in card
    assert "**Ours:** Coupling matrices $|A^{ll'}|$ at the last token" in card
    assert "({ref}`on its page <fig-coupling-grid>`)" in card
    assert "**The paper:** |A| over blocks 9–16 at the last token of the France prompt" in card
    assert ":link:" not in card  # a card-wide link would cover the thumbnail's own
    # Figs 33 and 34 share one image: Fig 34's card names Fig 33's instead of repeating it
    assert "{image} executed/figures/11_spectra_and_prompts/spectra-depth.png" in _card(
        md, "Paper A, Fig 33")
    card34 = _card(md, "Paper A, Fig 34")
    assert "**Ours:** the same figure as Paper A, Fig 33." in card34
    assert "{image}" not in card34 and ":link: fig-spectra-depth\n:link-type: ref" in card34
    card36 = md[md.index(":::{grid-item-card} Paper A, Fig 36\n"):]
    assert "{bdg-danger}`not offline` Needs the coupling of many pretrained LLMs" in card36[:400]
    assert "{image}" not in card36[: card36.index("\n:::\n")]
    assert "**The paper:** Coupling against benchmark score for several numbers" in card36


def test_gallery_follows_the_notebook_not_the_files_left_in_the_folder(monkeypatch, tmp_path):
    # A Gemma build after a SmolLM2 one kept SmolLM2's coupling-compare.png, and the
    # gallery linked fig-coupling-compare, a label no page had (-W failed)
    grid, grid_meta = shown_bundle(monkeypatch, "coupling-grid")
    seen = []
    monkeypatch.setattr(output, "display", lambda obj, raw, metadata: seen.append((obj, metadata)))
    output.not_drawn("coupling-compare", "no compare model other than m was given")
    executed_chapter(tmp_path, "05_depth_coupling",
                     [display_output(grid, grid_meta), display_output(*seen[0])])
    stale = tmp_path / "figures" / "05_depth_coupling" / "coupling-compare.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"an earlier model's figure")
    card = _card(gallery.gallery_markdown(tmp_path, chapters()), "Paper A, Fig 20")
    assert "fig-coupling-compare" not in card and "{image}" not in card
    assert ":link: executed/05_depth_coupling\n:link-type: doc" in card
    assert ("Not drawn for this model: `coupling-compare`, no compare model other than m was "
            "given.") in card
    # a chapter that said nothing: the gallery still says the figure was not drawn
    card1 = _card(gallery.gallery_markdown(tmp_path, chapters()), "Paper A, Fig 1")
    assert ("Not drawn for this model: `sweep-coupling-score`, chapter 09_generalization did "
            "not draw it in this run.") in card1


def test_gallery_refuses_a_regenerated_figure_that_no_chapter_draws(tmp_path):
    for name in ("book_figures.csv", "paper_figures.csv"):
        shutil.copy(figures.DATA / name, tmp_path / name)
    table = tmp_path / "paper_figures.csv"
    table.write_text(table.read_text().replace(
        "not reproduced,A diagram that explains the measurements; it holds no data to regenerate.",
        "regenerated,"))
    with pytest.raises(LlmdynError, match="A 2 is marked 'regenerated'"):
        gallery.gallery_rows(tmp_path, chapters(), data=tmp_path)


def test_a_partial_book_lists_the_figures_of_other_chapters_as_not_in_it(tmp_path):
    md = gallery.gallery_markdown(tmp_path, [c for c in chapters() if c != "06_token_coupling"])
    card = _card(md, "Paper A, Fig 4")
    assert "Not in this book: `self-coupling`, chapter 06_token_coupling is not in this book." \
        in card
    assert "{doc}`executed/06_token_coupling`" not in card and ":link:" not in card


def write_executed(folder, name, model, start, seconds):
    nb = nbformat.v4.new_notebook()
    end = start + dt.timedelta(seconds=seconds)
    nb.metadata["papermill"] = {"parameters": {"model": model}, "duration": seconds,
                                "start_time": start.isoformat(), "end_time": end.isoformat()}
    nbformat.write(nb, folder / f"{name}.ipynb")


def test_build_facts_are_read_from_the_executed_chapters(tmp_path):
    t0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.timezone.utc)
    write_executed(tmp_path, "a", "smollm2-135m", t0, 90.4)
    write_executed(tmp_path, "b", "smollm2-135m", t0 + dt.timedelta(minutes=5), 3600.0)
    facts = buildfacts.collect(tmp_path, ["a", "b"], now=t0 + dt.timedelta(hours=2))
    assert facts.models == ["smollm2-135m"] and facts.chapters == 2
    assert facts.run_seconds == pytest.approx(3690.4)
    text = buildfacts.render(facts)
    assert "Built for **`smollm2-135m`** with llmdyn **" + __version__ + "** on 2026-03-01 11:00" \
        in text
    assert "ran from 2026-03-01 09:00 to 2026-03-01 10:05 UTC" in text
    assert "1 h 01 min of notebook execution" in text  # 3690 s
    assert "(1 h 05 min from the first start" in text  # 09:00 to 10:05


def test_build_facts_refuse_an_unfinished_chapter(tmp_path):
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "a.ipynb")
    with pytest.raises(LlmdynError, match="did not finish"):
        buildfacts.collect(tmp_path, ["a"])
    with pytest.raises(LlmdynError, match="not executed"):
        buildfacts.collect(tmp_path, ["missing"])


@pytest.mark.parametrize("with_gallery", [True, False])
def test_the_gallery_is_written_only_for_a_book_that_has_its_page(tmp_path, with_gallery):
    from llmdyn.runner.build import write_generated

    shutil.copy(REPO / "_config.yml", tmp_path / "_config.yml")
    toc = (REPO / "_toc.yml").read_text()
    if not with_gallery:  # a partial book: one chapter, the gallery only named in a comment
        toc = ("format: jb-book\nroot: book/intro\nparts:\n  - caption: Paper A\n    chapters:\n"
               "      - file: book/executed/05_depth_coupling\n      # - file: book/gallery\n")
    (tmp_path / "_toc.yml").write_text(toc)
    executed = tmp_path / "book" / "executed"
    executed.mkdir(parents=True)
    t0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.timezone.utc)
    for name in chapters(tmp_path):
        write_executed(executed, name, "smollm2-135m", t0, 60.0)
    generated = write_generated(tmp_path)
    assert (generated / "gallery.md").exists() == with_gallery
    assert "smollm2-135m" in (generated / "build_facts.md").read_text()


def test_gallery_thumbnail_shows_the_papers_first_panel_and_a_later_card_names_it(monkeypatch,
                                                                                   tmp_path):
    # paper A Fig 1: chapter 08 draws panels b–e, chapter 09 panel a, the headline
    executed_chapter(tmp_path, "08_training",
                     [display_output(*shown_bundle(monkeypatch, "coupling-graph-training"))])
    executed_chapter(tmp_path, "09_generalization",
                     [display_output(*shown_bundle(monkeypatch, "loss-vs-coupling"))])
    rows = {r.figure.key: r for r in gallery.gallery_rows(tmp_path, chapters())}
    assert rows["A 1"].thumbnail == "figures/09_generalization/loss-vs-coupling.png"
    md = gallery.gallery_markdown(tmp_path, chapters())
    assert "**Ours:** the same figure as Paper A, Fig 1." in _card(md, "Paper A, Fig 7")
