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
from llmdyn.book import buildfacts, gallery
from llmdyn.book.figure_files import write_figure_files
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


def test_publish_writes_the_vector_file_and_captions_with_paper_figure_and_cell(monkeypatch,
                                                                                tmp_path):
    bundle, metadata = shown_bundle(monkeypatch, "coupling-grid")
    executed, out = tmp_path / "executed", tmp_path / "source" / "executed"
    executed.mkdir()
    original = executed_chapter(executed, "05_depth_coupling",
                                [display_output(bundle, metadata)] * 2)  # a cell that loops
    before = original.read_bytes()
    svgs = write_figure_files(executed, "https://example.org/r/blob/main", out=out)
    # issue 44: the executed chapter is another job's input, so only its copy is captioned
    assert original.read_bytes() == before and not (executed / "figures").exists()
    path, folder = out / "05_depth_coupling.ipynb", out / "figures" / "05_depth_coupling"
    assert svgs == [folder / "coupling-grid.svg", folder / "coupling-grid-2.svg"]
    assert "<svg" in svgs[0].read_text() and (folder / "coupling-grid.png").stat().st_size > 0
    md = [o.data["text/markdown"] for o in nbformat.read(path, as_version=4).cells[0].outputs]
    assert md[0].startswith(":::{figure} figures/05_depth_coupling/coupling-grid.png\n"
                            ":name: fig-coupling-grid\n")
    assert ":name: fig-coupling-grid-2" in md[1]
    assert "**Regenerates Paper A, Fig 3.**" in md[0] and "cell `cell-04`" in md[0]
    assert "(https://example.org/r/blob/main/notebooks/05_depth_coupling.ipynb)" in md[0]
    assert "{download}`coupling-grid.svg <figures/05_depth_coupling/coupling-grid.svg>`" in md[0]
    html = nbformat.read(path, as_version=4).cells[0].outputs[0].data["text/html"]
    assert html.startswith('<figure><img src="data:image/png;base64,' + bundle["image/png"])
    assert "<strong>Regenerates Paper A, Fig 3.</strong>" in html and "cell-04" in html
    assert write_figure_files(executed, "https://example.org/r/blob/main", out=out) == svgs
    with pytest.raises(LlmdynError, match="out is the executed chapters' own directory"):
        write_figure_files(executed, "https://example.org/r/blob/main", out=executed)


def test_publish_refuses_a_figure_shown_by_another_chapter(monkeypatch, tmp_path):
    bundle, metadata = shown_bundle(monkeypatch, "coupling-grid")
    executed_chapter(tmp_path, "07_regularity", [display_output(bundle, metadata)])
    with pytest.raises(LlmdynError, match="gives to chapter 05_depth_coupling"):
        write_figure_files(tmp_path, "https://example.org", out=tmp_path / "copy")


def test_caption_text_joins_papers_and_panels():
    assert figures.figure("self-coupling").paper_text() == "Paper A, Fig 4 and Fig 17 and Fig 21"
    assert figures.figure("trajectories").paper_text() == "Paper B, Fig 1; Paper A, Fig 12"
    assert figures.figure("growth-rates").paper_text() == "Not a figure of the papers"


def test_caption_says_what_kind_of_figure_it_is():
    # Only a figure that regenerates the paper's says "Regenerates" (issue 29, item 7).
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


def test_gallery_card_has_thumbnail_and_figure_link_when_drawn(tmp_path):
    folder = tmp_path / "figures" / "05_depth_coupling"
    folder.mkdir(parents=True)
    (folder / "coupling-grid.png").write_bytes(b"png")
    md = gallery.gallery_markdown(tmp_path, chapters())
    assert md.count(":::{grid-item-card}") == 54
    card = md[md.index(":::{grid-item-card} Paper A, Fig 3\n"):]
    card = card[: card.index("\n:::\n")]
    assert ":img-top: executed/figures/05_depth_coupling/coupling-grid.png" in card
    assert ":link: fig-coupling-grid\n:link-type: ref" in card
    card36 = md[md.index(":::{grid-item-card} Paper A, Fig 36\n"):]
    assert "{bdg-danger}`not offline` Needs the coupling of many pretrained LLMs" in card36[:400]
    assert ":img-top:" not in card36[: card36.index("\n:::\n")]


def test_gallery_refuses_a_regenerated_figure_that_no_chapter_draws(tmp_path):
    for name in ("book_figures.csv", "paper_figures.csv"):
        shutil.copy(figures.DATA / name, tmp_path / name)
    table = tmp_path / "paper_figures.csv"
    table.write_text(table.read_text().replace(
        "A,2,Schematic of the kinds of block coupling,not reproduced,\"A diagram that explains "
        "the measurements; it holds no data to regenerate.\"",
        "A,2,Schematic of the kinds of block coupling,regenerated,"))
    with pytest.raises(LlmdynError, match="A 2 is marked 'regenerated'"):
        gallery.gallery_rows(tmp_path, chapters(), data=tmp_path)


def test_gallery_refuses_a_chapter_missing_from_the_book(tmp_path):
    with pytest.raises(LlmdynError, match="not in _toc.yml"):
        gallery.gallery_rows(tmp_path, [c for c in chapters() if c != "06_token_coupling"])


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
    generated = write_generated(tmp_path / "source", tmp_path)
    assert generated == tmp_path / "source" / "book" / "generated"
    assert (generated / "gallery.md").exists() == with_gallery
    assert "smollm2-135m" in (generated / "build_facts.md").read_text()
