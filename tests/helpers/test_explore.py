"""helpers.explore: the states the site shows are the live widget's, and the page's markup."""

from __future__ import annotations

import random
import re

import pytest

from helpers.explore import Explorer, Slider, same_state


def square(a: int, b: str = "x") -> dict:
    return {"value": a * a, "label": b}


def draw(state: dict, ax, values: dict) -> None:
    ax.plot([0, 1], [0, state["value"]], label=state["label"])
    ax.legend()


def caption(state: dict, values: dict) -> tuple[str, str]:
    return f"square is {state['value']}", f"平方是 {state['value']}"


def make(**kw) -> Explorer:
    sliders = kw.pop("sliders", [Slider("a", [1, 2, 3], "a", "甲"),
                                 Slider("b", ["x", "y"], "b", "乙", default="y")])
    return Explorer(kw.pop("name", "sq"), kw.pop("compute", square), draw, caption, sliders,
                    title=kw.pop("title", ("Squares", "平方")), **kw)


def test_every_state_is_compute_at_its_grid_point():
    ex = make()
    assert len(ex.states) == 6
    for key, state in ex.states.items():
        assert state == square(**ex.values(key))
    assert ex.start() == (1, 1)  # the middle of a, b's default


def test_a_compute_that_is_not_deterministic_is_refused():
    rng = random.Random(0)
    with pytest.raises(AssertionError, match="differs from the precomputed"):
        make(compute=lambda a, b: {"value": a + rng.random(), "label": b})


def test_moving_the_live_slider_calls_compute_and_matches_the_precomputed_state():
    ex = make()
    box = ex.widget()
    slider_a = box.children[1]
    slider_a.value = 3
    values, state = ex.last_live
    assert values == {"a": 3, "b": "y"}
    assert same_state(state, ex.states[(2, 1)])
    assert box.children[-2].value[:8] == b"\x89PNG\r\n\x1a\n"  # the redrawn figure
    assert "9" in box.children[-1].value


def test_the_page_holds_one_picture_per_state_and_shows_the_first():
    page = make().html()
    states = re.findall(r'data-state="([\d,]+)"( hidden)?', page)
    assert len(states) == 6
    assert [key for key, hidden in states if not hidden] == ["1,1"]
    assert page.count('type="range"') == 2
    for n in range(2):  # each input has a label (its accessible name)
        assert f'<label for="explorer-sq-{n}">' in page and f'id="explorer-sq-{n}"' in page
    assert '<span lang="en">square is 4</span><span lang="zh-CN">平方是 4</span>' in page
    assert 'class="explorer-print"' in page  # the small multiples, for print
    # each picture's text is its caption, beside it (the alt stays empty: no repetition)
    assert page.count('alt=""') == 7 and page.count("<figcaption>") == 6
    assert page.count("<li>") == 6  # every state in words


def test_the_bundle_has_the_static_page_the_widget_and_a_text_summary():
    bundle = make()._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/html"].startswith('<div class="book-explorer"')
    assert bundle["text/plain"].splitlines()[0] == "a = 1, b = x: square is 1"


def test_the_live_widget_speaks_the_language_book_lang_names(monkeypatch):
    monkeypatch.setenv("BOOK_LANG", "zh")
    box = make().widget()
    assert box.children[1].description == "甲"
    assert "平方" in box.children[-1].value


@pytest.mark.parametrize("kw, message", [
    ({"name": "Bad Name"}, "lower-case"),
    ({"title": ("only English",)}, "title"),
    ({"sliders": []}, "one or two"),
    ({"sliders": [Slider("a", list(range(7)), "a", "甲"), Slider("b", list(range(6)), "b", "乙")]},
     "at most"),
])
def test_bad_explorers_are_refused(kw, message):
    with pytest.raises(ValueError, match=message):
        make(**kw)


@pytest.mark.parametrize("args, message", [
    (("not a name", [1, 2], "a", "甲"), "identifier"),
    (("a", [1], "a", "甲"), "at least two"),
    (("a", [1, 1], "a", "甲"), "repeated"),
    (("a", [1, 2], "a", "甲", "{}", 3), "not one of"),
])
def test_bad_sliders_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        Slider(*args)


def test_same_state_compares_tensors_arrays_and_nans():
    import numpy as np
    import torch

    assert same_state({"t": torch.tensor([1.0, float("nan")])},
                      {"t": torch.tensor([1.0, float("nan")])})
    assert not same_state({"t": torch.tensor([1.0])}, {"t": torch.tensor([1.5])})
    assert same_state([np.arange(3)], [np.arange(3)])
    assert not same_state([np.arange(3)], [np.arange(4)])
    assert same_state(float("nan"), float("nan"))
    assert not same_state(1, 1.0)
