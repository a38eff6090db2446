/* The chapter menu and "On this page" open on phones and tablets, and the chapter menu hides
 * on desktops (issue 28; pydata-sphinx-theme #2451, sphinx-book-theme #988).
 *
 * Each page has two copies of each sidebar button: one in pydata-sphinx-theme's header
 * (hidden by this book, and by the theme on small screens) and one in the article's header,
 * the one a reader sees. Both themes bind their handlers with
 * document.querySelector(".primary-toggle"), i.e. to the first, hidden copy, so the visible
 * button did nothing but show its tooltip. A click on any other copy is handed to the copy
 * the themes listen to: below 992 px pydata-sphinx-theme opens the sidebar as a dialog,
 * above it sphinx-book-theme hides or shows the sidebar. */
(function () {
  "use strict";
  function forward(event) {
    const button = event.target.closest(".primary-toggle, .secondary-toggle");
    if (!button) return;
    const kind = button.classList.contains("primary-toggle") ? ".primary-toggle" : ".secondary-toggle";
    const bound = document.querySelector(kind);
    if (!bound || bound === button) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    button.blur();
    const tooltip = window.bootstrap && window.bootstrap.Tooltip && window.bootstrap.Tooltip.getInstance(button);
    if (tooltip) tooltip.hide();
    bound.click();
  }
  document.addEventListener("click", forward, true);
})();
