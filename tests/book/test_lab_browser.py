"""The learner's path in a real browser: ``make lab``'s JupyterLab (tools/teach/lab.py, the same
code, on a free port and a workspace of its own), chapter 01 opened (it has exercises and
glued numbers, and no timing claim that a busy machine could fail), every cell run, a claim
seen "held" on the page; its explorer live (the widget, not the site's static view: a slider
moved with the keyboard redraws the figure); the page read as a learner reads it: no MyST
left in the rendered markdown, the book's numbers shown, each solution collapsed until
clicked (screenshots in ``_build/screenshots/``); the notebook saved; then what ``make
book`` and ``make student`` write is written, and ``make lab`` fills its workspace again:
the saved work is still there.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tools.build.jupyter_markdown import MARK
from tools.teach import lab

pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (pip install -r "
                    "requirements.txt)")
from playwright.sync_api import TimeoutError as PlaywrightTimeout  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from tests.book.test_site_offline import CHROMIUM, CHROMIUM_ARGS  # noqa: E402 (skips without Chromium)

CHAPTER = "01_autograd.ipynb"
SCREENSHOTS = lab.ROOT / "_build" / "screenshots"


def executed(path: Path) -> tuple[int, int, bool]:
    """(code cells, of which executed, whether a claim line says "held")."""
    code = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
            if c["cell_type"] == "code"]
    text = json.dumps([c["outputs"] for c in code])
    return len(code), sum(c["execution_count"] is not None for c in code), " held" in text


def show(page, text: str, where: str = "start") -> None:
    """Scroll the rendered markdown cell holding ``text`` to the top (``where``: or the
    "center"), and let it paint."""
    cell = page.locator(".jp-MarkdownCell", has_text=text).first
    cell.click()  # the active cell: JupyterLab scrolls back to the active cell otherwise
    cell.evaluate(f"cell => cell.scrollIntoView({{block: '{where}'}})")
    page.wait_for_timeout(800)


def read_as_a_learner(page, notebook: Path) -> None:
    """The rendered notebook: markdown without MyST, the book's numbers (†) present, every
    solution's code collapsed, and open after a click."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    markdown = sum(c["cell_type"] == "markdown" for c in cells)
    folded = sum(c["metadata"].get("jupyter", {}).get("source_hidden", False) for c in cells)
    marks = sum("".join(c["source"]).count(MARK) for c in cells if c["cell_type"] == "markdown")
    assert folded >= 3 and marks > 0, "the chapter shows exercises and glued numbers"
    page.wait_for_function(
        f"() => document.querySelectorAll('.jp-MarkdownCell .jp-RenderedMarkdown').length"
        f" >= {markdown}", timeout=60_000)
    text = page.evaluate("""() => [...document.querySelectorAll(
        '.jp-MarkdownCell .jp-RenderedMarkdown')].map(e => e.textContent).join('\\n')""")
    assert "{glue" not in text and ":::" not in text and ":class:" not in text
    assert text.count(MARK) == marks, "every glued number shows as a number"
    collapsed = page.locator(".jp-CodeCell .jp-InputPlaceholder")
    assert collapsed.count() == folded, "each solution's code is collapsed until clicked"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    show(page, "Solution to ex01-1", "center")
    page.screenshot(path=str(SCREENSHOTS / "lab-01-solution-folded.png"))
    collapsed.first.click()  # the placeholder opens the cell's code
    page.wait_for_function("() => document.querySelectorAll("
                           "'.jp-CodeCell .jp-InputPlaceholder').length"
                           f" === {folded - 1}", timeout=10_000)
    show(page, "Solution to ex01-1", "center")
    page.screenshot(path=str(SCREENSHOTS / "lab-01-solution-opened.png"))
    show(page, "This notebook")
    page.screenshot(path=str(SCREENSHOTS / "lab-01-top.png"))


def move_the_live_explorer(page) -> tuple[str, str]:
    """Chapter 01's explorer in JupyterLab is the live widget (not the site's static view):
    move its step slider with the keyboard and return the figure's source before and after."""
    box = page.locator(".jp-OutputArea-output .widget-vbox",
                       has_text="The error of a finite difference").first
    box.scroll_into_view_if_needed()
    assert page.locator(".jp-OutputArea-output .book-explorer").count() == 0
    image = box.locator("img").first
    before = image.get_attribute("src")
    page.screenshot(path=str(SCREENSHOTS / "lab-01-explorer-before.png"))
    handle = box.locator("[role=slider]").first
    handle.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("([img, old]) => img.getAttribute('src') !== old",
                           arg=[image.element_handle(), before], timeout=30_000)
    page.wait_for_timeout(300)
    page.screenshot(path=str(SCREENSHOTS / "lab-01-explorer-after.png"))
    return before, image.get_attribute("src")


def test_a_learner_runs_and_saves_chapter_01_and_no_command_loses_it(tmp_path, monkeypatch):
    folder = tmp_path / "workspace"
    lab.fill_workspace(folder, lab.book_versions())
    notebook = folder / CHAPTER
    assert executed(notebook)[1] == 0, "the workspace copy starts without outputs"
    # JupyterLab restores the tabs of its last session (~/.jupyter/lab/workspaces): a chapter
    # left open there would be on this page too, with cells this run never executes
    monkeypatch.setenv("JUPYTERLAB_WORKSPACES_DIR", str(tmp_path / "lab-workspaces"))
    running = lab.start(folder)
    outside: list[str] = []
    start = time.perf_counter()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 800})

            def route(request_route):
                url = request_route.request.url
                if url.startswith((f"http://127.0.0.1:{running.port}/", "data:", "blob:")):
                    request_route.continue_()
                else:
                    outside.append(url)
                    request_route.abort()

            page.route("**/*", route)
            page.goto(running.url.replace("/lab?", f"/lab/tree/{CHAPTER}?"))
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
            page.wait_for_selector("text=/ipykernel\\) \\| Idle/", timeout=90_000)
            page.click(".lm-MenuBar-itemLabel:text-is('Run')")
            page.click(".lm-Menu-itemLabel:text-is('Run All Cells')")
            page.wait_for_selector(".jp-OutputArea-output:has-text(' held')", state="attached",
                                   timeout=180_000)  # off screen is fine: it is on the page
            # the last exercise's check ran (a folded cell: its output is on the page)
            page.wait_for_selector(".jp-OutputArea-output:has-text('Exercise ex01-3: passed')",
                                   state="attached", timeout=180_000)
            # every code cell numbered: the kernel is also idle for a moment between two cells
            # of "Run All", so the status alone does not say that the last cell has run (a
            # folded solution shows no prompt; the saved notebook says that it ran too)
            try:
                page.wait_for_function(
                    """() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')]
                             .filter(c => !c.querySelector('.jp-InputPlaceholder'))
                             .every(c => /\\[\\d+\\]/.test(
                                 c.querySelector('.jp-InputPrompt')?.textContent || ''))""",
                    timeout=180_000)
            except PlaywrightTimeout:  # say why: Run All stops at a cell that raised
                raise AssertionError("not every cell ran; errors on the page: " + page.evaluate(
                    """() => [...document.querySelectorAll(
                        '.jp-OutputArea-output[data-mime-type*="error"]')]
                        .map(e => e.textContent.slice(0, 400)).join(' | ')""")) from None
            page.wait_for_selector("text=/ipykernel\\) \\| Idle/", timeout=180_000)
            read_as_a_learner(page, notebook)
            before, after = move_the_live_explorer(page)
            assert before != after and after.startswith(("blob:", "data:")), "a live redraw"
            before = notebook.stat().st_mtime_ns
            page.keyboard.press("Control+s")
            deadline = time.monotonic() + 30
            while notebook.stat().st_mtime_ns == before and time.monotonic() < deadline:
                time.sleep(0.2)
            page.screenshot(path=str(tmp_path / "lab.png"))
            browser.close()
    finally:
        lab.stop(running, folder)
    seconds = time.perf_counter() - start
    print(f"JupyterLab: chapter 01 opened, run, read and saved in {seconds:.0f} s")
    assert outside == [], f"JupyterLab asked the network for {outside}"
    cells, ran, held = executed(notebook)
    assert ran == cells and held, f"{ran} of {cells} cells saved as executed; held: {held}"
    saved = notebook.read_bytes()

    root = lab.ROOT
    for command in ([sys.executable, "-m", "tools.build.sync_notebooks"],  # what make book writes
                    [sys.executable, "-m", "tools.teach.student_edition", "--out",
                     str(tmp_path / "student")],
                    [sys.executable, "-m", "tools.teach.lab", "--prepare-only", "--workspace",
                     str(folder)]):
        result = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
    assert notebook.read_bytes() == saved, "the learner's saved notebook was changed"
    assert not lab.already_running(folder), "the lab is stopped and its record gone"
