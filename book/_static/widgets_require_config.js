// Loaded before require.js (see _config.yml, nb_ipywidgets_js): a global `require` object is
// require.js's configuration. The Jupyter widget manager (embed-amd.js) defines its modules
// under "@jupyter-widgets/..." and loads its icon fonts from beside the module's URL, which
// require.js would otherwise guess from the page's own folder; point it at the copy this site
// serves in _static/html-manager/dist/ (brought in by tools/pages/vendor_assets.py).
var require = {
  paths: {
    "@jupyter-widgets/html-manager/dist": new URL("html-manager/dist", document.currentScript.src).href,
  },
};
