// Accessible names that match what a reader sees (WCAG 2.5.3 "label in name"; found by the
// axe-core audit of tests/book/test_site_offline.py). The theme gives some controls an aria-label
// that leaves out their visible text ("Search" on a button reading "Search Ctrl+K", "Toggle
// hidden content" on "Show code cell source"); a voice-control user says the visible words.
// ipywidgets' slider handle (noUiSlider) has no name at all: it gets its widget's label.
// A block of output or code wider than the page scrolls sideways; a keyboard user can scroll
// it only if it can take focus (WCAG 2.1.1; axe's scrollable-region-focusable): such a block,
// and only such a block, is put in the tab order, re-checked when the width changes. The theme
// does this once at load; a widget's output, drawn later, was missed (zh/01's h-sweep).
(function () {
  "use strict";
  function nameControls(root) {
    // decorative icons inside a named control: their titles ("Light", "Dark") are not its name
    // (Font Awesome turns <i title> into <svg role=img><title>: the same, once drawn)
    root.querySelectorAll("[aria-label] i[title], [aria-label] svg").forEach(function (icon) {
      icon.removeAttribute("title");
      icon.removeAttribute("aria-labelledby");
      icon.removeAttribute("role");
      icon.setAttribute("aria-hidden", "true");
      icon.querySelectorAll("title").forEach(function (t) { t.remove(); });
    });
    root.querySelectorAll("[aria-label]").forEach(function (el) {
      var visible = (el.innerText || "").replace(/\s+/g, " ").trim();
      var label = el.getAttribute("aria-label");
      if (visible && label.toLowerCase().indexOf(visible.toLowerCase()) === -1) {
        el.setAttribute("aria-label", visible);
      }
    });
    root.querySelectorAll(".noUi-handle[role=slider]:not([aria-label])").forEach(function (el) {
      var widget = el.closest(".widget-slider, .jupyter-widgets");
      var text = widget && widget.querySelector(".widget-label");
      var name = text && text.innerText.trim();
      el.setAttribute("aria-label", name || "slider");
    });
  }
  var SCROLLERS = "pre, .cell_output .output";
  function focusScrollers(root) {
    var found = Array.prototype.slice.call(root.querySelectorAll(SCROLLERS));
    if (root.matches && root.matches(SCROLLERS)) { found.push(root); }
    found.forEach(function (el) {
      var overflow = window.getComputedStyle(el).overflowX;
      var scrolls = (overflow === "auto" || overflow === "scroll") && el.clientWidth > 0 &&
        el.scrollWidth > el.clientWidth + 1;
      if (scrolls && !el.hasAttribute("tabindex")) {
        el.setAttribute("tabindex", "0");
        el.setAttribute("data-a11y-scroll", "");
      } else if (!scrolls && el.hasAttribute("data-a11y-scroll")) {
        el.removeAttribute("tabindex");
        el.removeAttribute("data-a11y-scroll");
      }
    });
  }
  function focusAllScrollers() { focusScrollers(document); }
  var pending = false;
  function focusScrollersSoon() {
    if (pending) { return; }
    pending = true;
    window.requestAnimationFrame(function () { pending = false; focusAllScrollers(); });
  }
  function start() {
    nameControls(document);
    focusAllScrollers();
    window.addEventListener("load", focusAllScrollers);
    window.addEventListener("resize", focusScrollersSoon);
    new MutationObserver(function (records) {
      records.forEach(function (r) {
        r.addedNodes.forEach(function (n) {
          if (n.nodeType === 1) { nameControls(n.parentNode || n); }
          // an output drawn late (a widget's, or its text) may scroll too: checked at once,
          // before anything reads the page
          var host = n.nodeType === 1 ? n : n.parentNode;
          if (host && host.nodeType === 1) { focusScrollers(host.closest(SCROLLERS) || host); }
        });
      });
    }).observe(document.body, { childList: true, subtree: true });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
