// The printed book (_ext/book_pdf.py): run in the single-page build once MathJax has typeset
// it, before Chromium prints it. Used only by the PDF build, never by the HTML book.
//   bookPdf.prepare(page)  makes the page a book: internal links, chapters on new pages,
//                          solutions at the end of their chapter, no dead controls, formulas
//                          and figures within the page; returns what it changed.
//   bookPdf.number(pages)  fills in the page numbers of the contents and of each "solution on
//                          page N" from the destinations of a first print ({id: page}).
window.bookPdf = (() => {
  const byId = (id) => document.getElementById(id);

  // A link into the book itself (the single page was served as /whole-book.html, and Sphinx's
  // single-page links point at /book/index.html#...) becomes a link within the PDF (#id);
  // a link to a file of the build (a figure's full-size image, a notebook download) would point
  // at the temporary print server, so it keeps its text and loses the link.
  function internalLinks() {
    const counts = { internal: 0, unwrapped: 0, external: 0, unresolved: [] };
    for (const a of Array.from(document.querySelectorAll("a[href]"))) {
      const url = new URL(a.getAttribute("href"), location.href);
      if (url.origin !== location.origin) {
        counts.external += 1;
        continue;
      }
      const id = decodeURIComponent(url.hash.slice(1));
      const isBook = ["/whole-book.html", "/book/index.html", "/index.html"].includes(url.pathname);
      if (isBook && id && byId(id)) {
        a.setAttribute("href", "#" + id);
        counts.internal += 1;
      } else {
        if (isBook && id) counts.unresolved.push(a.getAttribute("href"));
        a.replaceWith(...a.childNodes);
        counts.unwrapped += 1;
      }
    }
    return counts;
  }

  // Each document of the single page follows an empty <span id="document-...">: a chapter (or
  // the references) starts a new page.
  function chapters() {
    const found = [];
    for (const mark of document.querySelectorAll('span[id^="document-book/"]')) {
      const section = mark.nextElementSibling;
      if (section && section.tagName === "SECTION") {
        section.classList.add("pdf-chapter");
        found.push({ id: mark.id, section });
      }
    }
    return found;
  }

  // "Show code cell source" is a control: the hidden cell (plotting code) stays in the HTML
  // book and the notebooks, not on paper. The optional-reading dropdowns print open.
  function deadControls() {
    let removed = 0;
    for (const d of Array.from(document.querySelectorAll("details.hide"))) {
      d.remove();
      removed += 1;
    }
    for (const b of Array.from(document.querySelectorAll(".toggle-button, button.toggle-button"))) b.remove();
    for (const el of document.querySelectorAll(".toggle-hidden")) el.classList.remove("toggle-hidden");
    for (const el of document.querySelectorAll(".dropdown")) el.classList.remove("dropdown", "toggle");
    return removed;
  }

  // A chapter's solutions move to a section at its end; each self-check links to its solution
  // ("Solution on page N") and each solution's title links back to its self-check.
  function solutions(chapterList) {
    let moved = 0;
    chapterList.forEach(({ id, section }, index) => {
      const found = Array.from(section.querySelectorAll(".solution"));
      if (!found.length) return;
      const number = (section.querySelector(".section-number") || { textContent: "" }).textContent.trim()
        .replace(/\.$/, "");
      const end = document.createElement("section");
      end.className = "pdf-solutions";
      end.id = `pdf-solutions-${index + 1}`;
      const heading = document.createElement("h3");
      heading.textContent = number ? `Solutions to the self-checks of chapter ${number}` : "Solutions to the self-checks";
      end.appendChild(heading);
      for (const solution of found) {
        const back = solution.querySelector(".admonition-title a[href^='#']");
        const exercise = back && byId(back.getAttribute("href").slice(1));
        if (exercise) {
          const p = document.createElement("p");
          p.className = "pdf-solution-link";
          const link = document.createElement("a");
          link.setAttribute("href", "#" + solution.id);
          link.append("Solution on page ");
          const page = document.createElement("span");
          page.dataset.pdfPageOf = solution.id;
          page.textContent = "000";
          link.appendChild(page);
          p.appendChild(link);
          exercise.appendChild(p);
        }
        end.appendChild(solution);
        moved += 1;
      }
      section.appendChild(end);
    });
    return moved;
  }

  // The contents: each entry gets a dotted leader and the page its chapter starts on.
  function contents() {
    let entries = 0;
    for (const a of document.querySelectorAll("#jb-print-toc a[href^='#']")) {
      // The entry points at the chapter's section, not at the empty mark before it (which
      // stays at the foot of the page before when the chapter breaks to a new page).
      const mark = byId(decodeURIComponent(a.getAttribute("href").slice(1)));
      const section = mark && mark.nextElementSibling;
      if (section && section.tagName === "SECTION" && section.id) a.setAttribute("href", "#" + section.id);
      const title = document.createElement("span");
      title.className = "pdf-toc-title";
      title.append(...a.childNodes);
      const leader = document.createElement("span");
      leader.className = "pdf-toc-leader";
      const page = document.createElement("span");
      page.className = "pdf-toc-page";
      page.dataset.pdfPageOf = decodeURIComponent(a.getAttribute("href").slice(1));
      page.textContent = "000";
      a.classList.add("pdf-toc-entry");
      a.append(title, leader, page);
      entries += 1;
    }
    return entries;
  }

  // A display formula wider than the text is set in a smaller size until it fits (MathJax's
  // CommonHTML output is sized in em), instead of being clipped at the margin.
  function fitFormulas() {
    const shrunk = [];
    for (const c of document.querySelectorAll('mjx-container[display="true"]')) {
      const box = c.closest("div.math") || c.parentElement;
      const eqno = box.querySelector(".eqno");
      const room = box.getBoundingClientRect().width - (eqno ? eqno.getBoundingClientRect().width + 12 : 0);
      const math = c.querySelector("mjx-math") || c;
      const width = math.getBoundingClientRect().width;
      if (width > room) {
        // `scale`: the formula's new size as a share of its size on the page, which is itself a
        // share of the text's (typeset_math.py's 127.3 %): the style set is the product of both.
        const scale = Math.floor((100 * room) / width) - 1;
        const current = (100 * parseFloat(getComputedStyle(c).fontSize)) / parseFloat(getComputedStyle(c.parentElement).fontSize);
        c.style.fontSize = `${((current * scale) / 100).toFixed(1)}%`;
        shrunk.push({ id: box.id || "", scale });
      }
    }
    return shrunk;
  }

  // A figure (image and caption) fits on one page: a taller one is scaled down whole, so
  // Chromium neither leaves a blank page before it nor slices it across two.
  function fitFigures(pageHeight) {
    const scaled = [];
    for (const img of document.querySelectorAll(".bd-article img")) {
      const r = img.getBoundingClientRect();
      if (!r.height) continue;
      const figure = img.closest("figure");
      const caption = figure ? figure.querySelector("figcaption") : null;
      const captionHeight = caption ? caption.getBoundingClientRect().height + 24 : 8;
      const room = pageHeight - captionHeight;
      if (r.height > room) {
        const s = room / r.height;
        img.style.setProperty("width", `${Math.floor(r.width * s)}px`, "important");
        img.style.setProperty("height", `${Math.floor(r.height * s)}px`, "important");
        scaled.push({ src: img.getAttribute("src"), scale: Math.round(s * 100) / 100 });
      }
    }
    return scaled;
  }

  // A heading never breaks at the hyphen of a word ("TF-" / "IDF"): each hyphenated word of a
  // heading is kept on one line.
  function keepHyphenatedWords() {
    let kept = 0;
    for (const h of document.querySelectorAll(".bd-article h1, .bd-article h2, .bd-article h3, .bd-article h4")) {
      const walker = document.createTreeWalker(h, NodeFilter.SHOW_TEXT);
      const texts = [];
      while (walker.nextNode()) if (!walker.currentNode.parentElement.closest("mjx-container")) texts.push(walker.currentNode);
      for (const text of texts) {
        const parts = text.textContent.split(/(\S+-\S+)/);
        if (parts.length < 2) continue;
        text.replaceWith(...parts.map((part, i) => {
          if (i % 2 === 0) return part;
          const span = document.createElement("span");
          span.style.whiteSpace = "nowrap";
          span.textContent = part;
          kept += 1;
          return span;
        }));
      }
    }
    return kept;
  }

  function prepare(pageHeight) {
    keepHyphenatedWords();
    const links = internalLinks();
    const chapterList = chapters();
    const controls = deadControls();
    const moved = solutions(chapterList);
    const entries = contents();
    const formulas = fitFormulas();
    const figures = fitFigures(pageHeight);
    return { links, chapters: chapterList.length, controls, solutions: moved, entries, formulas, figures };
  }

  function number(pages) {
    const missing = [];
    for (const el of document.querySelectorAll("[data-pdf-page-of]")) {
      const page = pages[el.dataset.pdfPageOf];
      if (page === undefined) missing.push(el.dataset.pdfPageOf);
      else el.textContent = String(page);
    }
    return missing;
  }

  // Every id the printed numbers need (the PDF's named destinations are checked against them).
  function targets() {
    return Array.from(new Set(Array.from(document.querySelectorAll("[data-pdf-page-of]"),
      (el) => el.dataset.pdfPageOf)));
  }

  // A formula as plain text for a bookmark: MathJax's CommonHTML draws each character from a
  // CSS class (mjx-c1D451 is U+1D451, a math italic d), with no text in the page itself.
  function mathText(node) {
    let out = "";
    for (const child of node.children) {
      const tag = child.tagName.toLowerCase();
      if (tag === "mjx-assistive-mml") continue;
      if (tag === "mjx-c") {
        const code = parseInt((child.className.match(/mjx-c([0-9A-F]+)/) || [])[1], 16);
        let ch = Number.isNaN(code) ? "" : String.fromCodePoint(code);
        if (code >= 0x1d44e && code <= 0x1d467) ch = String.fromCharCode(97 + code - 0x1d44e);
        if (code >= 0x1d434 && code <= 0x1d44d) ch = String.fromCharCode(65 + code - 0x1d434);
        out += ch;
      } else if (tag === "mjx-mo" && /^[=×+<>≤≥→]$/.test(mathText(child).trim())) {
        out += ` ${mathText(child).trim()} `;
      } else if (tag === "mjx-script" && child.closest("mjx-msup")) {
        out += "^" + mathText(child);
      } else {
        out += mathText(child);
      }
    }
    return out;
  }

  // The text of every heading the PDF's outline is made from (h1-h6 and role=heading, as
  // printed), in document order: the names its bookmarks should have.
  function headings() {
    const found = [];
    for (const h of document.querySelectorAll("h1, h2, h3, h4, h5, h6, [role=heading]")) {
      if (!h.getClientRects().length || h.closest("[aria-hidden=true]")) continue;
      const copy = h.cloneNode(true);
      for (const link of copy.querySelectorAll(".headerlink")) link.remove();
      for (const math of copy.querySelectorAll("mjx-container")) math.replaceWith(mathText(math).replace(/\s+/g, " ").trim());
      found.push(copy.textContent.replace(/\s+/g, " ").trim());
    }
    return found;
  }

  return { prepare, number, targets, headings };
})();
