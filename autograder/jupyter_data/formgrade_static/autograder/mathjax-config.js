// MathJax 2's configuration for Formgrader's submission page, read when MathJax.js loads (a
// text/x-mathjax-config block would need eval, which the page's policy forbids).
window.MathJax = {
  tex2jax: {inlineMath: [["$", "$"], ["\\(", "\\)"]], displayMath: [["$$", "$$"], ["\\[", "\\]"]],
            processEscapes: true, processEnvironments: true},
  CommonHTML: {linebreaks: {automatic: true}}
};
