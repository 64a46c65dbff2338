"""The learner's path in a real browser: ``make lab``'s JupyterLab (tools/lab.py, the same
code, on a free port and a workspace of its own), chapter 00 opened, every cell run, a claim
seen "held" on the page, the notebook saved; then what ``make book`` and ``make student``
write is written, and ``make lab`` fills its workspace again: the saved work is still there.

Run by ``make html-test``; skipped with the reason where Chromium or JupyterLab is absent.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tools import lab

pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (pip install -r "
                    "requirements.txt)")
from playwright.sync_api import sync_playwright  # noqa: E402
from test_site_offline import CHROMIUM, CHROMIUM_ARGS  # noqa: E402 (skips without Chromium)

CHAPTER = "00_setup.ipynb"


def executed(path: Path) -> tuple[int, int, bool]:
    """(code cells, of which executed, whether a claim line says "held")."""
    code = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
            if c["cell_type"] == "code"]
    text = json.dumps([c["outputs"] for c in code])
    return len(code), sum(c["execution_count"] is not None for c in code), " held" in text


def test_a_learner_runs_and_saves_chapter_00_and_no_command_loses_it(tmp_path):
    folder = tmp_path / "workspace"
    lab.fill_workspace(folder, lab.book_versions())
    notebook = folder / CHAPTER
    assert executed(notebook)[1] == 0, "the workspace copy starts without outputs"
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
            page.wait_for_selector(".jp-OutputArea-output:has-text(' held')", timeout=180_000)
            # every code cell numbered: the kernel is also idle for a moment between two cells
            # of "Run All", so the status alone does not say that the last cell has run
            page.wait_for_function(
                """() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]
                         .every(p => /\\[\\d+\\]/.test(p.textContent))""", timeout=180_000)
            page.wait_for_selector("text=/ipykernel\\) \\| Idle/", timeout=180_000)
            before = notebook.stat().st_mtime_ns
            page.keyboard.press("Control+s")
            deadline = time.monotonic() + 30
            while notebook.stat().st_mtime_ns == before and time.monotonic() < deadline:
                time.sleep(0.2)
            page.screenshot(path=str(tmp_path / "lab.png"))
            browser.close()
    finally:
        lab.stop(running, folder)
    print(f"JupyterLab: chapter 00 opened, run and saved in {time.perf_counter() - start:.0f} s")
    assert outside == [], f"JupyterLab asked the network for {outside}"
    cells, ran, held = executed(notebook)
    assert ran == cells and held, f"{ran} of {cells} cells saved as executed; held: {held}"
    saved = notebook.read_bytes()

    root = lab.ROOT
    for command in ([sys.executable, "-m", "tools.sync_notebooks"],  # what make book writes
                    [sys.executable, "-m", "tools.student_edition", "--out",
                     str(tmp_path / "student")],
                    [sys.executable, "-m", "tools.lab", "--prepare-only", "--workspace",
                     str(folder)]):
        result = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
    assert notebook.read_bytes() == saved, "the learner's saved notebook was changed"
    assert not lab.already_running(folder), "the lab is stopped and its record gone"
