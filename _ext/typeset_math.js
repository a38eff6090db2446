// The book's formulas typeset when the book is built (_ext/typeset_math.py), by the MathJax the
// book vendors (_vendor/mathjax, from npm) with its own lite DOM in node: no browser, no network.
// Reads one JSON document on stdin:
//   {mathjax: "<folder of MathJax's es5 build>", fontURL: "...", macros: {...},
//    pages: [[{tex: "...", display: true|false}, ...], ...]}
// and writes one on stdout:
//   {pages: [{html: ["<mjx-container ...>", ...], css: "..."}, ...], errors: [{page, index, tex, message}, ...]}
// Output: CommonHTML, with the MathML screen readers read (MathJax's assistive MathML). Each
// page gets the stylesheet of what it uses: the characters' rules and the @font-face of the
// fonts they need. A formula MathJax cannot typeset (a TeX error) is reported in `errors`:
// typeset_math.py fails the build.
"use strict";

const chunks = [];
process.stdin.on("data", (chunk) => chunks.push(chunk));
process.stdin.on("end", () => {
  const job = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  global.MathJax = {
    loader: {
      paths: {mathjax: job.mathjax},
      load: ["input/tex", "output/chtml", "adaptors/liteDOM", "a11y/assistive-mml"],
      require: require,
    },
    tex: {macros: job.macros || {}},
    chtml: {fontURL: job.fontURL || "", adaptiveCSS: true},
    startup: {typeset: false},
  };
  require(job.mathjax + "/startup.js");
  MathJax.startup.promise.then(() => {
    const adaptor = MathJax.startup.adaptor;
    const result = {pages: [], errors: []};
    job.pages.forEach((formulas, page) => {
      MathJax.startup.output.clearCache();   // this page's characters only, in its stylesheet
      const html = formulas.map((f, index) => {
        let node;
        try {
          node = MathJax.tex2chtml(f.tex, {display: !!f.display});
        } catch (error) {
          result.errors.push({page, index, tex: f.tex, message: String((error && error.message) || error)});
          return "";
        }
        const markup = adaptor.outerHTML(node);
        const marked = markup.match(/data-mjx-error="([^"]*)"/);
        if (marked || /<(mjx-)?merror\b/.test(markup)) {
          result.errors.push({page, index, tex: f.tex, message: marked ? marked[1] : "merror"});
        }
        return markup;
      });
      const css = formulas.length ? adaptor.textContent(MathJax.chtmlStylesheet()) : "";
      result.pages.push({html, css});
    });
    process.stdout.write(JSON.stringify(result));
  }).catch((error) => {
    process.stderr.write("typeset_math.js: " + ((error && error.stack) || error) + "\n");
    process.exit(1);
  });
});
