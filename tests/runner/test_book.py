"""The chapter runs under papermill on a tiny model, and the book builds with warnings as errors."""

import html
import re
import subprocess
import sys

import nbformat
import pytest
import yaml

from llmdyn import LlmdynError
from llmdyn.claims.breaks import grade_breaks, guard_breaks, read_glued, rule_breaks
from llmdyn.runner.build import REPO, build_html, chapters, run_chapter, stage

pytestmark = pytest.mark.slow


def smoke_parameters(name: str) -> dict:
    """Tiny parameters for one chapter, from tests/smoke/<chapter>.yaml."""
    return yaml.safe_load((REPO / "tests" / "smoke" / f"{name}.yaml").read_text())


# Chapters that share cached measurements (04, 05 and 11 ask for the same questions' Jacobians)
# or a training root (08 and 09) run one after the other in the same lane.
SAME_LANE = (("04_jacobian_alignment", "05_depth_coupling", "11_spectra_and_prompts"),
             ("08_training", "09_generalization"))


def lanes(names: list[str]) -> tuple[list[str], list[str]]:
    """Two lanes of chapters, run side by side; the others fill the shorter lane in turn."""
    a = [n for n in names if n in SAME_LANE[0]]
    b = [n for n in names if n in SAME_LANE[1]]
    for name in (n for n in names if n not in a and n not in b):
        (a if len(a) <= len(b) else b).append(name)
    return a, b


@pytest.fixture(scope="module")
def built_book(tmp_path_factory):
    """Every chapter at smoke size, two kernels at a time, then the HTML.

    A chapter's kernel mostly waits on one core (one thread, small models), so two lanes side by
    side take about half the time on a 2-core machine, as the any-model matrix found
    (tests/runner/test_any_model.py); every chapter still runs, and a failure stops the fixture.
    """
    from concurrent.futures import ThreadPoolExecutor

    root = stage(tmp_path_factory.mktemp("book"))

    def run_lane(names):
        for name in names:
            run_chapter(name, root / "book" / "executed", smoke_parameters(name), cwd=root)

    with ThreadPoolExecutor(max_workers=2) as pool:
        for done in [pool.submit(run_lane, lane) for lane in lanes(chapters())]:
            done.result()  # re-raises a chapter's failure
    return root, build_html(root)


def test_lanes_keep_sharing_chapters_together_and_run_every_chapter():
    a, b = lanes(chapters())
    assert sorted(a + b) == chapters() and abs(len(a) - len(b)) <= 1
    assert set(SAME_LANE[0]) <= set(a) and set(SAME_LANE[1]) <= set(b)


def test_every_toc_chapter_has_a_notebook():
    assert "05_depth_coupling" in chapters()
    for name in chapters():
        assert (REPO / "notebooks" / f"{name}.ipynb").exists(), name
        assert (REPO / "tests" / "smoke" / f"{name}.yaml").exists(), name


def test_chapter_html_contains_its_figures(built_book):
    _, html = built_book
    page = (html / "book" / "executed" / "05_depth_coupling.html").read_text()
    images = re.findall(r'<img[^>]+src="([^"]+\.png)"', page)
    assert len(images) >= 2
    for src in images:
        assert (html / "book" / "executed" / src).resolve().exists(), src
    assert "Paper vs this run" in page and "tiny-llama" in page
    assert "<table" in page  # the comparison, printed as Markdown, renders as a table


def test_built_pages_and_glued_keys_use_no_retired_name(built_book):
    # one word per quantity on the pages a reader sees, not only in the sources
    from tests.test_vocabulary import RETIRED

    root, html = built_book
    texts = {p.relative_to(html).as_posix(): p.read_text() for p in html.rglob("*.html")}
    texts |= {f"{nb.stem} (glued keys)": "\n".join(read_glued(nb))
              for nb in (root / "book" / "executed").glob("*.ipynb")}
    found = [f"{where}: {m.group()}" for where, text in texts.items()
             for pattern in RETIRED for m in re.finditer(pattern, text)]
    assert not found, found[:20]


#: a word of 7-40 hex digits that is not part of a number such as 0.1234567 or 2,600,000
HEX_WORD = re.compile(r"(?<![0-9A-Za-z_.,])[0-9a-f]{7,40}(?![0-9A-Za-z_]|[.,]\d)")
ISSUE_NUMBER = re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE)


def visible_text(page: str) -> str:
    """The text a reader sees: scripts, styles and tags removed, entities decoded."""
    page = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", page)
    return html.unescape(re.sub(r"(?s)<[^>]+>", " ", page))


def development_log(texts: dict[str, str], repo=REPO) -> list[str]:
    """Every commit of ``repo`` and every "issue N" in ``texts`` (where -> text), as "where: token".

    A hex word is a commit when git resolves it to one (one ``git cat-file --batch-check`` for
    all of them): model digests and the papers' own commits do not resolve here.
    """
    ask = sorted({w for text in texts.values() for w in HEX_WORD.findall(text)})
    answer = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch-check"],
                            input="".join(f"{w}^{{commit}}\n" for w in ask),
                            capture_output=True, text=True, check=True).stdout.splitlines()
    commits = {w for w, line in zip(ask, answer, strict=True) if line.split()[1:2] == ["commit"]}
    return [f"{where}: {token}" for where, text in texts.items()
            for token in [*(w for w in HEX_WORD.findall(text) if w in commits),
                          *ISSUE_NUMBER.findall(text)]]


def test_the_development_log_check_finds_a_commit_and_an_issue_number():
    if subprocess.run(["git", "-C", str(REPO), "rev-parse"], capture_output=True).returncode:
        pytest.skip(f"{REPO} is not a git checkout: no commits to look for")
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=7", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    page = (f"<p>built at <code>{head}</code>, decided in Issue 43;</p>"
            "<script>var x = 'issue 7';</script><p>model digest 0123abc9f, cafe, 0.1234567,"
            " 2,600,000 CPU-s</p>")
    assert development_log({"p": visible_text(page)}) == [f"p: {head}", "p: Issue 43"]


def test_no_page_shows_a_commit_of_this_repository_or_an_issue_number(built_book):
    if subprocess.run(["git", "-C", str(REPO), "rev-parse"], capture_output=True).returncode:
        pytest.skip(f"{REPO} is not a git checkout: no commits to look for")
    _, built = built_book
    texts = {p.relative_to(built).as_posix(): visible_text(p.read_text())
             for p in built.rglob("*.html") if "_static" not in p.parts}
    assert len(texts) > 10, sorted(texts)
    found = development_log(texts)
    assert not found, ("the book reads as a development log (say a disclosure in words; history "
                       "goes to CHANGELOG.md): " + ", ".join(found[:20]))


def test_the_intro_links_the_pdf_where_make_pdf_puts_it(built_book):
    from llmdyn.runner.pdf import PDF_NAME

    _, built = built_book
    intro = built / "book" / "intro.html"
    links = re.findall(r'href="([^"]+\.pdf)"', intro.read_text())
    assert [(intro.parent / link).resolve() for link in links] == [(built / PDF_NAME).resolve()]


def test_figures_are_captioned_with_the_paper_figure_and_kept_as_svg(built_book):
    _, html = built_book
    page = (html / "book" / "executed" / "05_depth_coupling.html").read_text()
    assert '<figure class="align-default" id="fig-coupling-grid">' in page
    caption = page[page.index('id="fig-coupling-grid"'):]
    caption = caption[: caption.index("</figcaption>")]
    assert "<strong>Regenerates Paper A, Fig 3.</strong>" in caption
    assert "cell-04" in caption and "notebooks/05_depth_coupling.ipynb" in caption
    svg = re.search(r'href="(\.\./\.\./_downloads/[0-9a-f]+/coupling-grid\.svg)"', caption)
    assert svg and (html / "book" / "executed" / svg.group(1)).resolve().exists()
    assert (html / "figures" / "05_depth_coupling" / "coupling-grid.svg").exists()
    assert "Show the parameters in effect" in page  # the collapsed parameters block


def test_gallery_and_landing_page_are_generated(built_book):
    _, html = built_book
    gallery = (html / "book" / "gallery.html").read_text()
    assert gallery.count("sd-card-title") == 54  # every figure of paper A (36) and B (18)
    assert 'href="executed/05_depth_coupling.html#fig-coupling-grid"' in gallery
    assert "not offline" in gallery and "Needs the coupling of many pretrained LLMs" in gallery
    intro = (html / "book" / "intro.html").read_text()
    assert "This build" in intro and "tiny-llama" in intro and "of notebook execution" in intro


def test_parameters_and_progress_bars_stay_off_the_page(built_book):
    _, html = built_book
    page = (html / "book" / "executed" / "05_depth_coupling.html").read_text()
    assert "n_prompts = " not in page  # the parameters cells are removed
    assert "it/s]" not in page and "Loading weights" not in page  # stderr is removed


def test_chapter_page_has_download_and_launch_buttons(built_book):
    _, html = built_book
    check_buttons(html, "05_depth_coupling")


def check_buttons(html, name):
    """The executed .ipynb (with outputs) downloads; repository and launch links are set."""
    page = (html / "book" / "executed" / f"{name}.html").read_text()
    assert f'href="../../_sources/book/executed/{name}.ipynb"' in page
    nb = nbformat.read(html / "_sources" / "book" / "executed" / f"{name}.ipynb", as_version=4)
    assert any(c.get("outputs") for c in nb.cells if c.cell_type == "code")
    url = yaml.safe_load((REPO / "_config.yml").read_text())["repository"]["url"]
    slug = url.removeprefix("https://github.com/")
    assert f'href="{url}"' in page
    assert f"https://mybinder.org/v2/gh/{slug}/main?urlpath=lab/tree/book/executed/{name}.ipynb" \
        in page
    assert f"https://colab.research.google.com/github/{slug}/blob/main/book/executed/" in page


def test_scorecard_reads_the_chapter(built_book):
    _, html = built_book
    page = (html / "book" / "scorecard.html").read_text()
    assert re.search(r"0\.\d{3}", page)
    assert "holds" in page or "does not hold" in page


def test_no_chapter_judges_an_estimate_without_an_interval(built_book):
    # the scorecard's rule, over every chapter's claims: a verdict needs a fact or an interval
    root, _ = built_book
    executed = sorted((root / "book" / "executed").glob("*.ipynb"))
    assert [nb.stem for nb in executed] == chapters()
    breaks = {nb.stem: rule_breaks(read_glued(nb)) for nb in executed}
    assert not any(breaks.values()), breaks
    # the three grades, read from the interval: no "partly"; "does not hold" only when the whole
    # interval misses; a straddling interval is "inconclusive" (llmdyn.claims.breaks.grade_breaks)
    grades = {nb.stem: grade_breaks(read_glued(nb)) for nb in executed}
    assert not any(grades.values()), grades
    assert all(any(k.endswith("_kind") for k in read_glued(nb)) for nb in executed)


def tampered_breaks(glued: dict) -> dict[str, list[str]]:
    """`guard_breaks` of one real judged t-interval row of ``glued``, broken five ways."""
    cid = next(k.removesuffix("_method") for k, m in glued.items() if k.endswith("_method")
               and m == "t" and str(glued[k.replace("_method", "_verdict")]).split(" (")[0]
               in ("holds", "inconclusive", "does not hold"))
    lo, hi = glued[f"{cid}_lo"], glued[f"{cid}_hi"]
    changes = {"below the floor": {f"{cid}_n": 2},
               "reversed interval": {f"{cid}_lo": hi, f"{cid}_hi": lo},
               "is not the centre": {f"{cid}_value": hi + (hi - lo)},
               "unknown sampling unit": {f"{cid}_unit": "token"},
               "graded as a fact": {f"{cid}_kind": "fact"}}
    return {why: guard_breaks({**glued, **change}) for why, change in changes.items()}


def test_publish_guard_passes_every_chapter_and_refuses_a_tampered_real_row(built_book):
    # the guard over a real build's rows: none breaks, and one real row broken is caught
    root, _ = built_book
    executed = sorted((root / "book" / "executed").glob("*.ipynb"))
    glued = {nb.stem: read_glued(nb) for nb in executed}
    assert {name: guard_breaks(values) for name, values in glued.items() if
            guard_breaks(values)} == {}
    found = tampered_breaks(glued["03_uncertainty"])
    assert all(any(why in b for b in got) for why, got in found.items()), found


def test_a_referee_written_apart_recomputes_every_holm_grade_and_robustness_word(built_book):
    root, _ = built_book
    done = subprocess.run([sys.executable, str(REPO / "tools" / "referee.py"),
                           str(root / "book" / "executed")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("; 0 disagreements")


def test_every_rendered_chapter_is_what_papermill_wrote(built_book):
    """run_chapter records each chapter's cells; the HTML build (whose figure
    step adds captions to the notebooks) leaves them matching, so a later build renders them."""
    from llmdyn.runner.build import not_rendered

    root, _ = built_book
    assert {name: not_rendered(root / "book" / "executed" / f"{name}.ipynb")
            for name in chapters()} == dict.fromkeys(chapters())


def test_executed_notebook_keeps_injected_parameters_hidden(built_book):
    root, _ = built_book
    nb = nbformat.read(root / "book" / "executed" / "05_depth_coupling.ipynb", as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected and all("remove-cell" in c.metadata["tags"] for c in injected)


def test_progress_names_chapter_and_model_and_the_kernel_is_quiet(tmp_path, capfd):
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "llmdyn", "language": "python",
                                                           "display_name": "Python (llmdyn)"}})
    nb.cells = [nbformat.v4.new_code_cell('model = "x"', metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("print(model)")]
    (tmp_path / "notebooks").mkdir()
    nbformat.write(nb, tmp_path / "notebooks" / "99_tiny.ipynb")
    out = run_chapter("99_tiny", tmp_path / "out", {"model": "tiny-llama"}, root=tmp_path,
                      cwd=tmp_path)
    assert nbformat.read(out, as_version=4).cells[-1].outputs[0].text == "tiny-llama\n"
    err = capfd.readouterr().err
    bars = [line for line in re.split(r"[\r\n]+", err) if "cell/s" in line or "s/cell" in line]
    assert bars and all("99_tiny [tiny-llama]" in line for line in bars), err
    assert "without encryption" not in err


def test_a_loaded_machine_gets_a_minute_for_a_cells_last_output(tmp_path, monkeypatch):
    # nbclient's 4 s failed chapter 02's last cell under load ("Timeout waiting for IOPub
    # output"); papermill turns that timeout into an error, so run_chapter asks for more.
    import papermill

    from llmdyn.runner import build

    seen = {}

    def record(*args, **kwargs):
        seen.update(kwargs)
        raise KeyboardInterrupt  # stop before any kernel starts

    monkeypatch.setattr(papermill, "execute_notebook", record)
    with pytest.raises(KeyboardInterrupt):
        run_chapter("05_depth_coupling", tmp_path, {}, cwd=tmp_path)
    assert seen["iopub_timeout"] == build.IOPUB_TIMEOUT_S >= 60


def test_wrongly_typed_parameter_fails_the_run(tmp_path):
    with pytest.raises(LlmdynError,
                       match="^chapter 05_depth_coupling: notebook parameter 'k' must be"):
        run_chapter("05_depth_coupling", tmp_path,
                    {**smoke_parameters("05_depth_coupling"), "k": "four"}, cwd=tmp_path)


def _committed(path):
    """The notebook as git holds it (the index: committed or staged), else the file itself."""
    rel = path.relative_to(REPO).as_posix()
    shown = subprocess.run(["git", "show", f":{rel}"], cwd=REPO, capture_output=True)
    return shown.stdout if shown.returncode == 0 else path.read_bytes()


def nbstripout_verify(paths) -> subprocess.CompletedProcess:
    """nbstripout's own check (exit 1 if it would strip anything), with the filter's flags."""
    return subprocess.run([sys.executable, "-m", "nbstripout", "--verify", "--keep-id",
                           *map(str, paths)], capture_output=True, text=True)


def test_source_notebooks_are_stripped(tmp_path):
    """A notebook committed with outputs fails `make test` (run `make strip`, or `make setup`)."""
    paths = sorted((REPO / "notebooks").glob("*.ipynb"))
    assert [p.stem for p in paths] == chapters()  # every chapter checked, and no stray notebook
    for path in paths:
        (tmp_path / path.name).write_bytes(_committed(path))
    check = nbstripout_verify(sorted(tmp_path.glob("*.ipynb")))
    assert check.returncode == 0, f"committed with outputs (run `make strip`):\n{check.stdout}"


def test_strip_check_catches_outputs(tmp_path):
    nb = nbformat.read(REPO / "notebooks" / "05_depth_coupling.ipynb", as_version=4)
    nbformat.write(nb, tmp_path / "clean.ipynb")
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="hi\n")]
    code.execution_count = 3
    nbformat.write(nb, tmp_path / "dirty.ipynb")
    check = nbstripout_verify([tmp_path / "clean.ipynb", tmp_path / "dirty.ipynb"])
    assert check.returncode == 1
    assert "dirty.ipynb" in check.stdout and "clean.ipynb" not in check.stdout


# --- the findings first: the intro's headline table, the boxes, the scorecard's summary -------

def _published(root):
    from llmdyn.claims.collected import collect

    return collect(root / "book" / "executed", chapters())


def _cells(row_html: str) -> list[str]:
    """The text of each cell of one HTML table row."""
    cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row_html, flags=re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in cells]


def _section_table(page: str, anchor: str) -> str:
    """The last claims table (headed by `render.COLUMNS`) of the section ``anchor``."""
    from llmdyn.claims.render import COLUMNS

    start = page.index(f'<section id="{anchor}"')
    body = page[start + 1:]
    body = body[:min(i for i in (body.find("<section"), body.find("</section>")) if i >= 0)]
    tables = [t for t in re.findall(r"<table.*?</table>", body, flags=re.S)
              if _cells(re.search(r"<tr.*?</tr>", t, flags=re.S).group(0)) == list(COLUMNS)]
    return tables[-1]


def _row_with(table: str, grade: str, number: str) -> list[str]:
    """The rows of an HTML table whose cells show the grade and the number."""
    rows = [_cells(r) for r in re.findall(r"<tr.*?</tr>", table, flags=re.S)]
    rows = [[c.replace(" · stand-in", "") for c in r] for r in rows]  # a chip's mark
    return [r for r in rows if any(c == grade or c.startswith(f"{grade} (") for c in r)
            and (number == "—" or any(number in c for c in r))]


def test_headline_map_covers_every_model_the_build_ran(built_book):
    from llmdyn.claims.abstracts import uncovered
    from llmdyn.claims.collected import build_models
    from llmdyn.claims.headlines import headline_map

    root, _ = built_book
    published = _published(root)
    assert len(build_models(published)) >= 2  # the smoke build runs two tiny pretrained models
    assert uncovered(published, headline_map()) == []


def test_intro_headlines_agree_with_the_chapter_pages_and_the_scorecard(built_book):
    root, html_dir = built_book
    intro = (html_dir / "book" / "intro.html").read_text()
    score = (html_dir / "book" / "scorecard.html").read_text()
    shown = re.findall(r'<div class="claim [^"]*" data-claim="(\w+)"[^>]*><span class="chip '
                       r'[^"]*" title="[^"]*">([^<·]+?)(?: · [^<]*)?</span>'
                       r'(?: <em class="qualifier">[^<]*</em>)? <span class="number">([^<]*)</span>'
                       r'(?: <span class="bound">[^<]*</span>)? <a class="where" '
                       r'href="([^"#]+)#([^"]+)"', intro)
    assert len(shown) >= 10 and "The abstracts, checked" in intro
    for cid, grade, number, href, anchor in shown:
        grade, number = html.unescape(grade).removesuffix(" · stand-in"), html.unescape(number)
        chapter = (html_dir / "book" / href).read_text()
        assert _row_with(_section_table(chapter, anchor), grade, number), (cid, href)
        assert _row_with(score, grade, number), cid  # the scorecard's pasted chapter tables
    table1 = intro[intro.index('class="table headlines table1"'):]
    for prop in ("LINEAR", "EQUISPACED", "ALIGNED", "CONFIDENT"):
        assert f'data-item="B-{prop.lower()}"' in table1


def _grade_counts(text: str) -> dict[str, int]:
    from llmdyn.claims import GRADES

    plain = html.unescape(re.sub(r"<[^>]+>", "", text))
    return {g: int(n.group(1)) for g in GRADES if (n := re.search(rf"(\d+) {g}\b", plain))}


def test_every_chapter_opens_with_a_findings_box_that_agrees_with_its_table(built_book):
    root, html_dir = built_book
    for table in _published(root):
        page = (html_dir / "book" / "executed" / f"{table.chapter}.html").read_text()
        title = "Findings of this run" if table.key == "scorecard" else "Table 1 in this run"
        start = page.index(title)
        first_cell = re.search(r'class="cell( tag_[\w-]+)* docutils container"', page).start()
        assert start < first_cell, table.chapter  # no code before it, even collapsed
        box = page[start:page.index("</div>", start)]  # the admonition holds no other div
        rows = [_cells(r) for r in re.findall(r"<tr.*?</tr>", _section_table(page, table.anchor),
                                              flags=re.S)[1:]]
        counted = {}
        for row in rows:
            grade = row[3].split(" (")[0]
            counted[grade] = counted.get(grade, 0) + 1
        assert _grade_counts(box) == counted, (table.chapter, table.key)


def test_scorecard_summary_counts_the_pasted_chapter_tables(built_book):
    root, html_dir = built_book
    score = (html_dir / "book" / "scorecard.html").read_text()
    grid = score[score.index('id="summary"'):score.index('id="every-claim"')]
    for table in _published(root):
        label = ("scorecard-" + table.chapter[:2]) if table.key == "scorecard" else \
            f"scorecard-{table.key}"
        linked = re.findall(rf'<a href="#{label}">(?:<span class="chip [^>]*>)?(\d+)(?:</span>)?'
                            "</a>", grid)
        section = score[score.index(f'id="{label}"'):]
        pasted = section[section.index("<table"):section.index("</table>")]
        rows = len(re.findall(r"<tr class=\"verdict-", pasted))
        # each model's grade counts and its total link to the section: twice the pasted rows
        assert rows == len(table.records) and sum(map(int, linked)) == 2 * rows, label


def test_scorecard_filters_by_chapter_and_grade_in_chromium(built_book):
    from llmdyn.claims.scoreboard import table_name
    from tests.browser import chromium, open_page, pick_in_pane, shown_rows

    root, html_dir = built_book
    published = _published(root)
    total = sum(len(t.records) for t in published)
    table, grade = max(((t, g) for t in published for g in {r.grade for r in t.records}),
                       key=lambda tg: (sum(r.grade == tg[1] for r in tg[0].records) <= 10,
                                       sum(r.grade == tg[1] for r in tg[0].records)))
    expected = sorted(r.statement for r in table.records if r.grade == grade)
    name = table_name(table)
    with chromium() as session:
        open_page(session, html_dir / "book" / "scorecard.html", "div.dtsp-searchPane")
        assert len(shown_rows(session, "scorecard-claims")) == min(total, 25)
        pick_in_pane(session, 1, name)
        pick_in_pane(session, 3, grade)
        rows = shown_rows(session, "scorecard-claims")
        info = session.find_element("css selector", ".dt-info").text
    assert [r[1] for r in rows] == [name] * len(expected) and {r[6] for r in rows} == {grade}
    # a claim graded under a phase split names it after its statement
    assert sorted(re.sub(r" \([a-z0-9 ]+ split\)$", "", r[3].rsplit(" (", 1)[0])
                  for r in rows) == expected
    assert f"of {len(expected)} entries (filtered from {total} total entries)" in info


def test_intro_headline_table_in_chromium(built_book):
    from llmdyn.claims.abstracts import assign
    from llmdyn.claims.claim import slug
    from llmdyn.claims.collected import build_models
    from llmdyn.claims.headlines import headline_map
    from tests.browser import chromium, open_page

    root, html_dir = built_book
    published = _published(root)
    models, found = build_models(published), assign(published, headline_map())
    with chromium() as session:
        open_page(session, html_dir / "book" / "intro.html", "table.abstracts")
        head = [th.text for th in session.find_elements("css selector", "table.abstracts th")]
        cells = {row.get_attribute("data-item"): [td.text for td in
                                                   row.find_elements("css selector", "td")]
                 for row in session.find_elements("css selector", "table.headlines tbody tr")}
    assert head == ["paper", "the abstract says", *models]
    kinds = {(h.paper, h.item): h.kind for h in headline_map()}
    for (paper, item), pairs in found.items():
        table1 = kinds[paper, item] == "table1"
        row = cells[f"{paper}-{slug(item)}" if table1 else f"{paper}-{item}"]
        columns = [m for m in models if any(r.model == m for t in published if t.key == "table1"
                                            for r in t.records)] if table1 else models
        for rec, _ in pairs:
            column = row[2 + columns.index(rec.model)]
            assert rec.grade in column and rec.number in column, (item, rec.id)


# A chapter a reader takes in at 1280 × 800: at most 15 screens, code at most 5 % of the page and
# tables at most 35 %, as the page loads (collapsed details do not count); every figure links to
# its full-size image and is drawn at least 1/2.2 of its pixel width, so its text stays legible.
MAX_SCREENS, MAX_CODE, MAX_TABLES, MIN_SCALE = 15, 0.05, 0.35, 1 / 2.2


def test_chapters_fit_the_reading_targets_and_figures_open_full_size_in_chromium(built_book):
    from tests.browser import chromium, composition

    _, html_dir = built_book
    executed = html_dir / "book" / "executed"
    over, figures = [], 0
    with chromium((1280, 800)) as session:
        for name in chapters():
            page = composition(session, executed / f"{name}.html")
            if page.screens > MAX_SCREENS:
                over.append(f"{name}: {page.screens:.1f} screens")
            if page.code > MAX_CODE * page.article:
                over.append(f"{name}: code {page.code / page.article:.0%} of the page")
            if page.tables > MAX_TABLES * page.article:
                over.append(f"{name}: tables {page.tables / page.article:.0%} of the page")
            for fig in page.figures:
                figures += 1
                full = (executed / (fig["link"] or "")).resolve()
                if not (fig["link"] and full.suffix == ".png" and full.exists()):
                    over.append(f"{name}: {fig['src']} links to {fig['link']}, not its image")
                if fig["drawn"] < MIN_SCALE * fig["natural"] - 0.5:  # 0.5: sub-pixel layout
                    over.append(f"{name}: {fig['src']} drawn {fig['drawn']:.0f} px wide, "
                                f"{fig['drawn'] / fig['natural']:.2f} of its {fig['natural']} px")
        gallery = composition(session, html_dir / "book" / "gallery.html")
    assert figures >= 2 * len(chapters()), figures  # the chapters drew their figures
    assert not over, over
    assert len(gallery.figures) >= 10
    unlinked = [f["src"] for f in gallery.figures if not (
        f["link"] and f["link"].endswith(".png")
        and (html_dir / "book" / f["link"]).resolve().exists())]
    assert not unlinked, unlinked


# --- the answer first: the intro's first screen, the scorecard's length, the CSV --------------

SCREEN = (1280, 800)  # a reader's laptop; the theme's header bar takes 64 px of it


def _viewport(session) -> None:
    """Make the page's viewport exactly `SCREEN` (the window's own bars are not page)."""
    session.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": SCREEN[0], "height": SCREEN[1], "deviceScaleFactor": 1, "mobile": False})


def test_intro_first_screen_states_both_papers_and_the_scale_in_chips(built_book):
    from llmdyn.claims.answer import PAPER_TITLES
    from tests.browser import chromium, open_page

    _, html_dir = built_book
    with chromium() as session:
        _viewport(session)
        open_page(session, html_dir / "book" / "intro.html", "div.answer")
        answer = session.execute_script("""
            const box = document.querySelector('div.answer');
            const paras = [...box.querySelectorAll('p')];
            const scale = paras.find(p => p.textContent.startsWith('Scale.'));
            const chip = box.querySelector('span.chip-does-not-hold, span.chip-inconclusive,'
                                           + ' span.chip-no-verdict');
            return {text: box.innerText, scale_bottom: scale.getBoundingClientRect().bottom,
                    lists: [...box.querySelectorAll('ul')].map(
                        u => u.getBoundingClientRect().bottom),
                    chip_bg: getComputedStyle(chip).backgroundColor};""")
    first_screen = SCREEN[1]
    assert all(bottom <= first_screen for bottom in answer["lists"]), answer["lists"]
    assert answer["scale_bottom"] <= first_screen, answer["scale_bottom"]
    assert all(PAPER_TITLES[p] in answer["text"] for p in "AB")
    assert "not tested at the paper's scale; on the stand-in" in answer["text"].replace("’", "'")
    assert answer["chip_bg"] not in ("rgba(0, 0, 0, 0)", "transparent")  # the book's CSS


def test_scorecard_fits_thirty_screens_and_links_every_claim_as_csv(built_book):
    import csv

    from tests.browser import chromium, open_page

    root, html_dir = built_book
    with chromium() as session:
        _viewport(session)
        open_page(session, html_dir / "book" / "scorecard.html", "div.dtsp-searchPane")
        height = session.execute_script("return document.documentElement.scrollHeight")
        header = session.execute_script("""  // scrolled half-way down the summary grid
            const grid = document.querySelector('table.scorecard-summary');
            const box = grid.getBoundingClientRect();
            window.scrollTo(0, window.scrollY + box.top + box.height / 2);
            return [grid.getBoundingClientRect().top,
                    grid.querySelector('thead th').getBoundingClientRect().top];""")
    assert height / (SCREEN[1] - 64) <= 30, height
    assert header[0] < 0 <= header[1] <= 100, header  # its header stays in view
    page = (html_dir / "book" / "scorecard.html").read_text()
    assert 'id="every-claim-as-csv"' in page  # where each chapter's findings box links
    links = dict(re.findall(r'href="(\.\./_downloads/[0-9a-f]+/([\w.]+\.csv))"', page))
    published = _published(root)
    assert "claims.csv" in links.values() and {f"{t.chapter}.csv" for t in published} <= \
        set(links.values())
    path = next(p for p, name in links.items() if name == "claims.csv")
    with (html_dir / "book" / path).open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == sum(len(t.records) for t in published)
    assert {r["grade"] for r in rows} == {rec.grade for t in published for rec in t.records}
