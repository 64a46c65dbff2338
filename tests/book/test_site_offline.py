"""Every page of the built book in a real browser, with every request outside the site blocked.

Run by ``make test`` after the build (``make html-test``). Chromium is Debian's (``apt-get
install chromium``; ``.ci/run`` installs it), driven by Playwright for Python through
``executable_path``, since Playwright's own browser download needs a network. Each page is
opened from ``file://``; any request to anything else is aborted and counted as a failure.
A screenshot of each page's first screen goes to ``_build/screenshots/`` for a person to look
at (``BOOK_FULL_SCREENSHOTS=1``: the whole page, about 10 s more per long chapter), and a
table of what was checked per page to ``_build/screenshots/pages.md``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tools.build.chapter_format import chapters

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
# a chapter is 50,000-80,000 px tall: encoding it whole took longer than auditing it
FULL_SCREENSHOTS = bool(os.environ.get("BOOK_FULL_SCREENSHOTS"))
CHROMIUM = os.environ.get("BOOK_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
WIDTH = 1280
PHONE = 390
# make assets (tools/pages/vendor_assets.py)
AXE = ROOT / "_vendor-test" / "axe-core" / "axe.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = ("serious", "critical")  # impacts that fail the test; the rest are counted
LOCAL = ("file:", "data:", "blob:", "about:")
# Chromium's own background traffic is off, so every request it makes comes from the page.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-dev-shm-usage"]

if not (HTML / "index.html").exists():
    if os.environ.get("BOOK_REQUIRE_HTML"):
        raise RuntimeError("_build/html is missing: run `jupyter-book build .` first")
    pytest.skip("book not built", allow_module_level=True)
if not Path(CHROMIUM).is_file():
    pytest.skip(f"browser test skipped: no Chromium at {CHROMIUM}. Install Debian's "
                "(`apt-get install chromium`, as root; .ci/run does) or set BOOK_CHROMIUM to "
                "a Chromium binary", allow_module_level=True)

from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402

REDIRECT = '<meta http-equiv="Refresh"'
# both editions (the Chinese one is in zh/); not the theme's template fragments in _static/
ALL_HTML = sorted(p.relative_to(HTML).as_posix() for p in HTML.rglob("*.html")
                  if not any(part.startswith("_") for part in p.relative_to(HTML).parts))
# index.html only redirects to the first chapter (tested below); every other page is opened
PAGES = [n for n in ALL_HTML if not (HTML / n).read_text(encoding="utf-8").startswith(REDIRECT)]


@dataclass
class Visit:
    """What one page did in the browser."""

    outside: list[str] = field(default_factory=list)  # requests that would leave the site
    failed: list[str] = field(default_factory=list)  # local requests that failed
    maths: int = 0  # .math elements in the page
    rendered: int = 0  # of which MathJax rendered
    raw_tex: list[str] = field(default_factory=list)  # TeX delimiters left in the text
    widgets: list[tuple[float, float]] = field(default_factory=list)  # rendered sizes
    sideways: int = 0  # pixels the page body scrolls sideways
    wide_code: list[str] = field(default_factory=list)  # code lines wider than their block
    phone_sideways: int = 0  # the same at a phone's width (PHONE px)
    # each explorer's shown state before and after its first slider is moved one step with
    # the keyboard: (explorer id, before, after)
    explorers: list[tuple[str, str, str]] = field(default_factory=list)
    colab: list[str] = field(default_factory=list)  # the Colab links, as the browser has them
    # axe-core's WCAG 2.1 A/AA violations: (mode, rule, impact, how many elements, an example)
    axe: list[tuple[str, str, str, int, str]] = field(default_factory=list)


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def open_page(browser: Browser, url: str) -> tuple[Page, Visit]:
    """Load ``url`` with every request that would leave the site aborted and recorded."""
    visit = Visit()
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})

    def route(r):
        if not r.request.url.startswith(LOCAL):
            visit.outside.append(r.request.url)
            return r.abort()
        return r.continue_()

    page.route("**/*", route)
    page.on("requestfailed", lambda request: request.url.startswith(LOCAL)
            and visit.failed.append(request.url))
    page.goto(url, wait_until="load")
    return page, visit


def inspect(page: Page, visit: Visit, shots: str | None = None) -> Visit:
    """Wait for MathJax and the widgets, then measure what the reader sees (``shots``: where
    the explorers' screenshots go, as :func:`move_explorers` takes it)."""
    if page.query_selector("script[src*='tex-mml-chtml']"):
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                               timeout=30_000)
        page.evaluate("() => MathJax.startup.promise")
    if page.query_selector("script[type='application/vnd.jupyter.widget-view+json']"):
        try:
            page.wait_for_selector(".jupyter-widgets", state="visible", timeout=15_000)
        except Exception:  # reported below as no widget rendered
            pass
    visit.maths = page.locator(".math").count()
    visit.rendered = page.locator(".math mjx-container").count()
    visit.raw_tex = page.evaluate(
        r"""() => [...document.querySelectorAll('.math')]
                 .map(e => e.innerText).filter(t => /\\[(\[]/.test(t)).slice(0, 5)""")
    visit.widgets = [(box["width"], box["height"]) for el in page.query_selector_all(
        ".cell_output .jupyter-widgets.widget-interact") if (box := el.bounding_box())]
    visit.wide_code = page.evaluate(
        """() => [...document.querySelectorAll('.cell_input pre, .highlight-python pre')]
                 .filter(e => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1)
                 .map(e => e.innerText.split('\\n')
                      .reduce((a, b) => a.length >= b.length ? a : b))""")
    visit.sideways = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    visit.axe = audit(page, "light")
    visit.colab = page.eval_on_selector_all("a[href*='colab.research.google.com']",
                                            "links => links.map(a => a.href)")
    visit.explorers = move_explorers(page, shots)
    page.evaluate("window.scrollTo(0, 0)")  # the explorers' screenshots scrolled to them
    return visit


SHOWN_STATE = """e => [...e.querySelectorAll('.explorer-state')].filter(f => !f.hidden)
                        .map(f => f.dataset.state).join(' ')"""
EXPLORER_SHOTS = ("book/01_autograd.html", "book/03_training.html")


def move_explorers(page: Page, shots: str | None = None) -> list[tuple[str, str, str]]:
    """Move each explorer's first slider one step right with the keyboard (End first when it
    starts at the end); screenshots of the explorer before and after under ``shots``."""
    moved = []
    for n, explorer in enumerate(page.query_selector_all(".book-explorer")):
        before = explorer.evaluate(SHOWN_STATE)
        if shots:
            explorer.scroll_into_view_if_needed()
            explorer.screenshot(path=f"{shots}-explorer{n}-before.png")
        slider = explorer.query_selector("input[type=range]")
        slider.focus()
        at_end = slider.evaluate("s => s.value === s.max")
        page.keyboard.press("ArrowLeft" if at_end else "ArrowRight")
        after = explorer.evaluate(SHOWN_STATE)
        if shots:
            explorer.screenshot(path=f"{shots}-explorer{n}-after.png")
        moved.append((explorer.get_attribute("id") or "", before, after))
    return moved


def audit(page: Page, mode: str,
          rules: list[str] | None = None) -> list[tuple[str, str, str, int, str]]:
    """axe-core's WCAG 2.1 A/AA rules on the page as it is now (or only ``rules``)."""
    assert AXE.is_file(), f"no {AXE}: `make assets` vendors axe-core"
    if not page.evaluate("() => !!window.axe"):
        page.add_script_tag(path=str(AXE))
    only = {"type": "rule", "values": rules} if rules else {"type": "tag", "values": AXE_TAGS}
    # preload: false, or axe fetches every stylesheet again by XHR (which fails on file://)
    result = page.evaluate("""only => axe.run(document, {runOnly: only, preload: false,
                                                       resultTypes: ['violations']})""", only)
    return [(mode, v["id"], v["impact"] or "", len(v["nodes"]),
             (v["nodes"][0]["target"][0] if v["nodes"] and v["nodes"][0]["target"] else ""))
            for v in result["violations"]]


def dark_and_phone(page: Page, visit: Visit) -> None:
    """The page again in dark mode (the theme's switch), audited; then at a phone's width."""
    # no transitions: the audit must see the dark colours, not a frame half way there
    page.add_style_tag(content="*, *::before, *::after { transition: none !important; }")
    page.evaluate("""() => { document.documentElement.dataset.theme = 'dark';
                           document.documentElement.dataset.mode = 'dark'; }""")
    page.wait_for_timeout(300)
    visit.axe += audit(page, "dark", rules=["color-contrast"])  # the rule colours change
    page.set_viewport_size({"width": PHONE, "height": 844})
    page.wait_for_timeout(100)
    visit.phone_sideways = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth")


def shot_path(name: str) -> Path:
    return SHOTS / (name.removesuffix(".html").replace("/", "__") + ".png")


@pytest.fixture(scope="module")
def visits(browser) -> dict[str, Visit]:
    """Every page, opened once; screenshots and a table written as they go."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    results = {}
    for name in PAGES:
        page, visit = open_page(browser, (HTML / name).as_uri())
        results[name] = inspect(page, visit, explorer_shots(name) if name in EXPLORER_SHOTS
                                else None)
        page.screenshot(path=shot_path(name), full_page=FULL_SCREENSHOTS)
        loaded_failed = list(visit.failed)  # what failed while the page loaded
        dark_and_phone(page, visit)  # (a stylesheet re-read on a theme or width change and
        visit.failed = loaded_failed  # cut short by closing the page is not a load failure)
        page.close()
    rows = [f"| {n} | {v.maths} | {v.rendered} | {len(v.widgets)} | {len(v.outside)} | "
            f"{shot_path(n).relative_to(ROOT)} |" for n, v in results.items()]
    (SHOTS / "pages.md").write_text(
        "| page | maths | rendered by MathJax | widgets | outside requests | screenshot |\n"
        "|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n", encoding="utf-8")
    (SHOTS / "axe.md").write_text(axe_table(results), encoding="utf-8")
    return results


def axe_table(results: dict[str, Visit]) -> str:
    """Violations by rule, impact and mode over every page (what the audit found)."""
    counts: dict[tuple[str, str, str], list[int]] = {}
    for visit in results.values():
        for mode, rule, impact, nodes, _ in visit.axe:
            entry = counts.setdefault((rule, impact, mode), [0, 0])
            entry[0] += 1
            entry[1] += nodes
    lines = [f"axe-core {AXE_TAGS}: {len(results)} pages, light and dark", "",
             "| rule | impact | mode | pages | elements |", "|---|---|---|---|---|"]
    lines += [f"| {r} | {i} | {m} | {p} | {n} |" for (r, i, m), (p, n) in sorted(counts.items())]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("name", PAGES)
def test_page_needs_nothing_outside_the_site(visits, name):
    visit = visits[name]
    assert not visit.outside, f"{name} requested {visit.outside}"
    assert not visit.failed, f"{name}: these files of the site failed to load: {visit.failed}"
    assert visit.rendered == visit.maths, f"{name}: MathJax rendered {visit.rendered} of " \
                                          f"{visit.maths} formulas"
    assert not visit.raw_tex, f"{name} shows raw TeX: {visit.raw_tex}"
    assert visit.sideways <= 0, f"{name}: the page scrolls {visit.sideways} px sideways at " \
                                f"{WIDTH} px"
    assert not visit.wide_code, f"{name}: code lines hidden behind a scroll bar: {visit.wide_code}"
    assert visit.phone_sideways <= 0, f"{name}: the page scrolls {visit.phone_sideways} px " \
                                      f"sideways at a phone's {PHONE} px"
    assert shot_path(name).stat().st_size > 0


@pytest.mark.parametrize("name", PAGES)
def test_page_has_no_serious_accessibility_violation(visits, name):
    blocking = [v for v in visits[name].axe if v[2] in BLOCKING]
    assert not blocking, f"{name}: axe-core (WCAG 2.1 A/AA) found " + "; ".join(
        f"{mode}: {rule} ({impact}, {nodes} elements, e.g. {example})"
        for mode, rule, impact, nodes, example in blocking)


def test_the_audit_ran_and_its_other_findings_are_counted(visits):
    print("\n" + axe_table(visits))
    assert (SHOTS / "axe.md").read_text(encoding="utf-8").startswith("axe-core")


def test_the_audit_catches_a_planted_violation(browser):
    """An image with no text alternative and a slider with no name: axe must see both."""
    page = browser.new_page()
    page.set_content("<html lang='en'><head><title>t</title></head><body><main>"
                     "<img src='data:image/png;base64,iVBORw0KGgo='>"
                     "<input type='range'></main></body></html>")
    found = {rule for _, rule, impact, _, _ in audit(page, "light") if impact in BLOCKING}
    page.close()
    assert {"image-alt", "label"} <= found, found


def test_the_front_page_redirects_into_the_book(browser):
    page, visit = open_page(browser, (HTML / "index.html").as_uri())
    page.wait_for_url("**/book/intro.html")
    page.close()
    assert not visit.outside and not visit.failed


def test_every_page_was_opened_and_the_maths_found(visits):
    names = {f"book/{c.stem}.html" for c in chapters()}
    assert names <= set(visits)
    assert visits["book/01_autograd.html"].maths >= 10


def test_each_explorer_responds_offline_to_the_keyboard(visits):
    """Every explorer of every page shows one state, and another once its slider moves."""
    found = {name: v.explorers for name, v in visits.items() if v.explorers}
    assert "book/01_autograd.html" in found and "zh/01_autograd.html" in found, found
    for name, moved in found.items():
        for ident, before, after in moved:
            assert before and after and " " not in before + after, (name, ident, before, after)
            assert before != after, f"{name} {ident}: the figure did not change"


@contextmanager
def altered_chapter_01(old: str, new: str) -> Iterator[str]:
    """A copy of chapter 01 beside it (so relative paths hold) with the line holding ``old``
    replaced by ``new``; yields its URL. (Playwright cannot intercept file:// requests, so
    a local script is left out by editing a copy.)"""
    source = HTML / "book" / "01_autograd.html"
    text = source.read_text(encoding="utf-8")
    line = next(line for line in text.splitlines() if old in line)
    copy = source.parent / "_probe.html"
    copy.write_text(text.replace(line, new), encoding="utf-8")
    try:
        yield copy.as_uri()
    finally:
        copy.unlink()


def test_without_the_explorer_script_the_first_state_stands(browser):
    with altered_chapter_01("explorer.js", "") as url:
        page, _ = open_page(browser, url)
        shown = [f.bounding_box() for f in page.query_selector_all(".book-explorer figure")
                 if f.is_visible()]
        ready = page.query_selector(".explorer-ready, .quiz-ready")
        page.close()
    assert ready is None  # the script was really left out
    assert len(shown) == 1 and shown[0]["width"] > 200 and shown[0]["height"] > 100, shown


def explorer_shots(name: str) -> str:
    return str(SHOTS / name.removesuffix(".html").replace("/", "__"))


@pytest.mark.parametrize("name", EXPLORER_SHOTS)
def test_explorer_screenshots_before_and_after_moving_the_slider(visits, name):
    """For a person to look at: _build/screenshots/<page>-explorer0-before/after.png, taken
    when the page was visited."""
    moved = visits[name].explorers
    assert moved and moved[0][1] != moved[0][2] and not visits[name].outside
    for when in ("before", "after"):
        assert Path(f"{explorer_shots(name)}-explorer0-{when}.png").stat().st_size > 1000


@pytest.mark.parametrize("name, verdict", [("book/01_autograd.html", "Not quite"),
                                           ("zh/01_autograd.html", "不对")])
def test_a_question_answered_on_the_page_shows_its_explanation(browser, name, verdict):
    page, visit = open_page(browser, (HTML / name).as_uri())
    quiz = page.locator(".book-quiz").first
    answer = int(quiz.get_attribute("data-answer"))
    closed = quiz.locator("details.quiz-explanation").evaluate("d => d.open")
    wrong = 1 if answer != 1 else 2
    quiz.locator(".quiz-option").nth(wrong - 1).click()
    said = quiz.locator(".quiz-verdict").inner_text()
    opened = quiz.locator("details.quiz-explanation").evaluate("d => d.open")
    quiz.locator(".quiz-option").nth(answer - 1).click()
    right = quiz.locator(".quiz-verdict").inner_text()
    page.close()
    assert not closed and opened and not visit.outside
    assert said.startswith(verdict) and str(answer) in said, said
    assert right and not right.startswith(verdict), right


@pytest.mark.parametrize("chapter", chapters(), ids=lambda p: p.stem)
def test_colab_button_in_the_browser(visits, chapter):
    """The links read when the page was visited (both editions)."""
    for name, folder in ((f"book/{chapter.stem}.html", ""), (f"zh/{chapter.stem}.html", "zh/")):
        if name not in visits:
            continue  # not translated yet
        hrefs = visits[name].colab
        assert hrefs and all(h.endswith(f"/notebooks/{folder}{chapter.stem}.ipynb")
                             for h in hrefs), (name, hrefs)


def test_search_works_offline(browser):
    page, visit = open_page(browser, (HTML / "search.html").as_uri() + "?q=autograd")
    page.wait_for_selector("#search-results li a", timeout=30_000)
    hrefs = page.eval_on_selector_all("#search-results li a", "links => links.map(a => a.href)")
    page.close()
    assert any("book/01_autograd.html" in h for h in hrefs), hrefs
    assert not visit.outside, visit.outside


@pytest.mark.parametrize("query, chapter", [("梯度", "01_autograd"), ("梯度裁剪", "03_training")])
def test_chinese_search_works_offline(browser, query, chapter):
    """The Chinese site's search (jieba's words in the index; the glossary's terms whole)."""
    if not (HTML / "zh" / f"{chapter}.html").exists():
        pytest.skip(f"{chapter} is not in the Chinese edition yet")
    page, visit = open_page(browser, (HTML / "zh" / "search.html").as_uri() + f"?q={query}")
    page.wait_for_selector("#search-results li a", timeout=30_000)
    hrefs = page.eval_on_selector_all("#search-results li a", "links => links.map(a => a.href)")
    page.close()
    assert any(f"zh/{chapter}.html" in h for h in hrefs), hrefs
    assert not visit.outside, visit.outside


def test_the_language_links_work_both_ways_in_the_browser(browser):
    page, _ = open_page(browser, (HTML / "book" / "00_setup.html").as_uri())
    page.click("p.language-link a")
    page.wait_for_url("**/zh/00_setup.html")
    assert page.evaluate("document.documentElement.lang") == "zh-CN"
    page.click("p.language-link a")
    page.wait_for_url("**/book/00_setup.html")
    page.close()


def test_a_cdn_script_put_back_is_caught(browser):
    """The check can fail: chapter 01 with MathJax from jsDelivr again."""
    cdn = "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"
    with altered_chapter_01("tex-mml-chtml.js", f'<script defer src="{cdn}"></script>') as url:
        page, visit = open_page(browser, url)
        page.wait_for_timeout(500)
        rendered = page.locator(".math mjx-container").count()
        page.close()
    assert visit.outside == [cdn]
    assert rendered == 0


def test_every_widget_bundle_loads_its_fonts_from_the_site(browser):
    """Each bundle of the widget manager takes its icon fonts from beside its module's URL:
    for all four, that is _static/html-manager/dist/, where the fonts are (the page's folder
    was guessed for base and controls once, and their icons failed to load). A page with a
    widget loads these three scripts (_config.yml); no chapter has one today, so a probe page
    beside the chapters loads them as such a page would."""
    scripts = ["widgets_require_config.js", "requirejs/require.js",
               "html-manager/dist/embed-amd.js"]
    probe = HTML / "book" / "_probe_widgets.html"
    probe.write_text("<!DOCTYPE html><html><head>" + "".join(
        f'<script src="../_static/{s}"></script>' for s in scripts) + "</head><body></body></html>",
        encoding="utf-8")
    try:
        page, visit = open_page(browser, probe.as_uri())
        urls = page.evaluate("""() => ['@jupyter-widgets/base', '@jupyter-widgets/controls',
            '@jupyter-widgets/html-manager', '@jupyter-widgets/html-manager/dist/libembed-amd']
            .map(id => new URL(require.toUrl(id), document.baseURI).href)""")
        page.close()
    finally:
        probe.unlink()
    dist = HTML / "_static" / "html-manager" / "dist"
    assert not visit.failed and list(dist.glob("*.woff2"))
    assert [url.rsplit("/", 1)[0] for url in urls] == [dist.as_uri()] * 4, urls
