"""Explorers: a figure the reader changes with one or two sliders (every chapter has one;
book/README.md, "Explorers").

``Explorer(name, compute, draw, caption, sliders)`` evaluates ``compute(**values)`` at every
point of the sliders' grid when it is made (the *precomputed states*), and shows itself in
three ways from those states and the same functions:

- **live, in Jupyter** (JupyterLab, Notebook 7, Colab): ipywidgets sliders; each move calls
  ``compute`` again for the new point (:meth:`Explorer.live_state`) and redraws;
- **on the static site**, offline and without a kernel: the output's ``text/html`` holds one
  picture per state and range inputs; ``book/_static/explorer.js`` switches between the
  pictures in the browser (the site prefers this ``text/html`` to the widget: ``_config.yml``,
  ``nb_mime_priority_overrides``); the texts are in both languages and the page's language
  shows (``book.css``);
- **in print** (the PDF is printed from the site): every state at once, as small multiples.

Each state also has a one-line caption in words (``caption``), listed under the figure for a
reader who cannot see it. :meth:`Explorer.check_live` recomputes one grid point the way the
live widget does and compares it with the precomputed state: the two are one function.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_NAME_RE = re.compile(r"[a-z][a-z0-9-]{0,40}")
MAX_STATES = 36  # every state is a picture in the page: keep the page light
Text = tuple[str, str]  # (English, Chinese)


@dataclass(frozen=True)
class Slider:
    """One parameter of an explorer: the keyword ``name`` of ``compute``, the grid of
    ``values`` it takes, its label in English and Chinese, and how a value is written."""

    name: str
    values: Sequence[Any]
    label: str
    label_zh: str
    fmt: str = "{}"
    default: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"Slider name must be a Python identifier (compute's keyword), "
                             f"got {self.name!r}")
        if isinstance(self.values, (str, bytes)) or len(self.values) < 2:
            raise ValueError(f"Slider {self.name!r}: values must be a sequence of at least two "
                             f"grid points, got {self.values!r}")
        if len(set(map(repr, self.values))) != len(self.values):
            raise ValueError(f"Slider {self.name!r}: repeated values in {self.values!r}")
        if self.default is not None and self.default not in self.values:
            raise ValueError(f"Slider {self.name!r}: default {self.default!r} is not one of "
                             f"its values {list(self.values)!r}")
        object.__setattr__(self, "values", tuple(self.values))

    @property
    def start(self) -> int:
        """Index of the value shown first (the default, else the middle of the grid)."""
        if self.default is None:
            return (len(self.values) - 1) // 2
        return self.values.index(self.default)

    def text(self, value: Any) -> str:
        return self.fmt.format(value)


def same_state(a: Any, b: Any) -> bool:
    """Whether two states are equal, element by element (tensors and arrays exactly, floats
    exactly or both NaN)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_state(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(map(same_state, a, b))
    if hasattr(a, "shape") and hasattr(b, "shape"):
        import numpy as np

        a_np = a.detach().cpu().numpy() if hasattr(a, "detach") else np.asarray(a)
        b_np = b.detach().cpu().numpy() if hasattr(b, "detach") else np.asarray(b)
        return a_np.shape == b_np.shape and bool(np.array_equal(a_np, b_np, equal_nan=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def language() -> str:
    """The live widget's language: ``zh`` when ``BOOK_LANG`` says so (``make lab BOOK_LANG=zh``
    starts JupyterLab with it), else ``en``."""
    return "zh" if os.environ.get("BOOK_LANG", "").lower().startswith("zh") else "en"


def _both(text: Text, tag: str = "span") -> str:
    """Both languages of ``text``; the site's CSS shows the page's language."""
    en, zh = (html.escape(t) for t in text)
    return f'<{tag} lang="en">{en}</{tag}><{tag} lang="zh-CN">{zh}</{tag}>'


def _png(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=fig.dpi)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


class Explorer:
    """A figure over a grid of slider values, precomputed for the site, live in Jupyter
    (chapter 01 introduces it; every chapter has one)."""

    def __init__(self, name: str, compute: Callable[..., Any],
                 draw: Callable[[Any, Any, dict[str, Any]], None],
                 caption: Callable[[Any, dict[str, Any]], Text],
                 sliders: Sequence[Slider], *, title: Text,
                 figsize: tuple[float, float] = (5.6, 3.2), dpi: int = 80) -> None:
        if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
            raise ValueError(f"an explorer's name is lower-case letters, digits and '-' "
                             f"(it names the page's elements), got {name!r}")
        if not all(callable(f) for f in (compute, draw, caption)):
            raise TypeError("compute, draw and caption must be functions")
        sliders = tuple(sliders)
        if not 1 <= len(sliders) <= 2 or not all(isinstance(s, Slider) for s in sliders):
            raise ValueError(f"an explorer has one or two Sliders, got {sliders!r}")
        if len({s.name for s in sliders}) != len(sliders):
            raise ValueError("two sliders with the same name")
        if not (isinstance(title, tuple) and len(title) == 2
                and all(isinstance(t, str) and t for t in title)):
            raise ValueError(f"title is (English, Chinese), got {title!r}")
        size = math.prod(len(s.values) for s in sliders)
        if size > MAX_STATES:
            raise ValueError(f"{size} states: at most {MAX_STATES} pictures go into a page; "
                             "use fewer grid points")
        self.name, self.sliders, self.title = name, sliders, title
        self.compute, self.draw, self.caption = compute, draw, caption
        self.figsize, self.dpi = figsize, dpi
        self.states: dict[tuple[int, ...], Any] = {
            key: compute(**self.values(key)) for key in self.keys()}
        self._widget = None
        self.last_live: tuple[dict[str, Any], Any] | None = None
        self.check_live()

    def keys(self) -> list[tuple[int, ...]]:
        """Every grid point, as a tuple of value indices (the first slider varies slowest)."""
        return list(itertools.product(*(range(len(s.values)) for s in self.sliders)))

    def values(self, key: tuple[int, ...]) -> dict[str, Any]:
        """``compute``'s keyword arguments at grid point ``key``."""
        return {s.name: s.values[i] for s, i in zip(self.sliders, key, strict=True)}

    def start(self) -> tuple[int, ...]:
        return tuple(s.start for s in self.sliders)

    def live_state(self, **values: Any) -> Any:
        """What the live widget shows for ``values``: ``compute`` called now."""
        state = self.compute(**values)
        self.last_live = (values, state)
        return state

    def check_live(self, key: tuple[int, ...] | None = None) -> None:
        """Recompute grid point ``key`` (default: the first state shown) as the live widget
        does and raise if it differs from the precomputed state."""
        key = self.start() if key is None else key
        live = self.live_state(**self.values(key))
        if not same_state(live, self.states[key]):
            raise AssertionError(f"explorer {self.name!r}: the live state at "
                                 f"{self.values(key)} differs from the precomputed one: is "
                                 "compute deterministic (seeded inside)?")

    # --- pictures -------------------------------------------------------------------------
    def figure(self, key: tuple[int, ...]):
        """One state's figure (a matplotlib Figure, not shown by pyplot)."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=self.figsize, dpi=self.dpi, layout="constrained")
        self.draw(self.states[key], fig.subplots(), self.values(key))
        return fig

    def small_multiples(self):
        """Every state in one figure (the PDF's view): a row per value of the first slider
        when there are two, else up to four to a row."""
        from matplotlib.figure import Figure

        keys = self.keys()
        if len(self.sliders) == 2:
            rows, cols = (len(s.values) for s in self.sliders)
        else:
            cols = min(4, len(keys))
            rows = math.ceil(len(keys) / cols)
        fig = Figure(figsize=(2.6 * cols, 2.1 * rows), dpi=self.dpi, layout="constrained")
        axes = fig.subplots(rows, cols, squeeze=False).ravel()
        for ax, key in zip(axes, keys, strict=False):
            self.draw(self.states[key], ax, self.values(key))
            ax.set_title(self.label_of(key, sep="\n"), fontsize=7)
            ax.tick_params(labelsize=6)
            ax.xaxis.label.set_fontsize(7)
            ax.yaxis.label.set_fontsize(7)
            if ax.get_legend():
                ax.get_legend().remove()
        for ax in axes[len(keys):]:
            ax.set_visible(False)
        return fig

    def label_of(self, key: tuple[int, ...], lang: str = "en", sep: str = ", ") -> str:
        """The sliders' values at ``key`` in words (``step h = 1e-06, dtype = float64``)."""
        return sep.join(f"{s.label_zh if lang == 'zh' else s.label} = {s.text(s.values[i])}"
                         for s, i in zip(self.sliders, key, strict=True))

    # --- the three views ------------------------------------------------------------------
    def text(self, lang: str = "en") -> str:
        """Every state in words: the explorer's text summary."""
        index = 1 if lang == "zh" else 0
        return "\n".join(f"{self.label_of(k, lang)}: {self.caption(s, self.values(k))[index]}"
                         for k, s in self.states.items())

    def html(self) -> str:
        """The static explorer for the site: range inputs, one picture per state,
        captions, the states as text, and the small multiples for print."""
        start = self.start()
        controls = []
        for n, (s, i) in enumerate(zip(self.sliders, start, strict=True)):
            ident = f"explorer-{self.name}-{n}"
            shown = [s.text(v) for v in s.values]
            controls.append(
                f'<div class="explorer-control"><label for="{ident}">'
                f'{_both((s.label, s.label_zh))}</label> <input type="range" id="{ident}" '
                f'min="0" max="{len(s.values) - 1}" step="1" value="{i}" '
                f'aria-valuetext="{html.escape(shown[i], quote=True)}" '
                f"data-values='{html.escape(json.dumps(shown, ensure_ascii=False), quote=True)}'> "
                f'<output for="{ident}">{html.escape(shown[i])}</output></div>')
        states = []
        for key, state in self.states.items():
            fig = self.figure(key)
            caption = self.caption(state, self.values(key))
            hidden = "" if key == start else " hidden"
            states.append(
                f'<figure class="explorer-state" data-state="{",".join(map(str, key))}"{hidden}>'
                f'<img src="data:image/png;base64,{_png(fig)}" alt="" '
                f'width="{round(self.figsize[0] * self.dpi)}">'
                f'<figcaption>{_both(caption)}</figcaption></figure>')
        listing = "".join(
            f"<li>{_both((self.label_of(k), self.label_of(k, 'zh')))}: "
            f"{_both(self.caption(s, self.values(k)))}</li>" for k, s in self.states.items())
        return (
            f'<div class="book-explorer" id="explorer-{self.name}">'
            f'<p class="explorer-title">{_both(self.title, "strong")}</p>'
            f'<div class="explorer-live">{"".join(controls)}'
            f'<div class="explorer-states" aria-live="polite">{"".join(states)}</div></div>'
            f'<details class="explorer-text"><summary>'
            f'{_both(("Every state in words", "逐一列出每个状态"))}</summary><ul>{listing}</ul>'
            f'</details><img class="explorer-print" alt="" '
            f'src="data:image/png;base64,{_png(self.small_multiples())}"></div>')

    def widget(self):
        """The live ipywidgets view (made once): a slider per parameter, the figure, its
        caption; each move calls :meth:`live_state`."""
        if self._widget is not None:
            return self._widget
        import ipywidgets as widgets

        lang = language()
        sliders = [widgets.SelectionSlider(
            options=[(s.text(v), v) for v in s.values], value=s.values[s.start],
            description=s.label_zh if lang == "zh" else s.label, continuous_update=False,
            style={"description_width": "initial"}, layout={"width": "28em"})
            for s in self.sliders]
        live_dpi = 100  # drawn at its own size: a smaller picture stretched looks blurred
        image = widgets.Image(format="png", width=str(round(self.figsize[0] * live_dpi)),
                              layout={"max_width": "100%"})
        caption = widgets.HTML()

        def show(_change: Any = None) -> None:
            from matplotlib.figure import Figure

            values = {s.name: w.value for s, w in zip(self.sliders, sliders, strict=True)}
            state = self.live_state(**values)
            fig = Figure(figsize=self.figsize, dpi=live_dpi, layout="constrained")
            self.draw(state, fig.subplots(), values)
            image.value = base64.b64decode(_png(fig))
            caption.value = html.escape(self.caption(state, values)[1 if lang == "zh" else 0])

        for w in sliders:
            w.observe(show, names="value")
        show()
        title = widgets.HTML(f"<b>{html.escape(self.title[1 if lang == 'zh' else 0])}</b>")
        self._widget = widgets.VBox([title, *sliders, image, caption])
        return self._widget

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle: dict[str, Any] = {"text/plain": self.text(), "text/html": self.html()}
        try:
            live = self.widget()._repr_mimebundle_()
        except ImportError:  # no ipywidgets: the static view alone
            live = None
        if live:
            bundle.update({k: v for k, v in live.items() if k != "text/plain"})
        return bundle
