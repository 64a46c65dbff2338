// Loaded before require.js (see _config.yml, nb_ipywidgets_js): a global `require` object is
// require.js's configuration. The Jupyter widget manager (embed-amd.js) defines its modules
// under "@jupyter-widgets/..." (base, controls, html-manager, html-manager/dist/libembed-amd),
// and each bundle loads its icon fonts from beside its module's URL, which require.js would
// otherwise guess from the page's own folder (book/@jupyter-widgets/..., where nothing is: the
// icon fonts of base and controls then failed to load). Point them all
// at the copy this site serves in _static/html-manager/dist/ (tools/pages/vendor_assets.py):
// "@jupyter-widgets/controls" is dist/controls.js, ".../html-manager/dist/libembed-amd" is
// dist/libembed-amd.js (the longer prefix wins), all beside the fonts.
var require = (function () {
  var dist = new URL("html-manager/dist", document.currentScript.src).href;
  return { paths: { "@jupyter-widgets": dist, "@jupyter-widgets/html-manager/dist": dist } };
})();
