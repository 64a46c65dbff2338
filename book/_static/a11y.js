// Accessible names that match what a reader sees (WCAG 2.5.3 "label in name"; found by the
// axe-core audit of tests/test_site_offline.py). The theme gives some controls an aria-label
// that leaves out their visible text ("Search" on a button reading "Search Ctrl+K", "Toggle
// hidden content" on "Show code cell source"); a voice-control user says the visible words.
// ipywidgets' slider handle (noUiSlider) has no name at all: it gets its widget's label.
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
  function start() {
    nameControls(document);
    new MutationObserver(function (records) {
      records.forEach(function (r) {
        r.addedNodes.forEach(function (n) { if (n.nodeType === 1) { nameControls(n.parentNode || n); } });
      });
    }).observe(document.body, { childList: true, subtree: true });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
