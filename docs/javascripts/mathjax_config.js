// MathJax 3 configuration for pymdownx.arithmatex (generic mode: \( \) inline, \[ \] display).
// Loaded before assets/mathjax/tex-chtml.js, which scripts/mkdocs_hooks.py copies into the site.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
  },
};

// No re-typesetting hook: the site does not use Material's instant navigation (mkdocs.yml), so every
// page is a full load that MathJax typesets once at start-up. The usual recipe for instant navigation
// (document$.subscribe(... clearCache(); typesetClear(); texReset(); typesetPromise())) ran right after
// that first typesetting on every page and cleared the CHTML glyph cache: every formula was drawn
// empty. tests/test_docs_site.py checks the rendered pages in headless Chromium.
