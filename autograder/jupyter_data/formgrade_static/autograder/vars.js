// Formgrader's page variables, from the JSON block just before this script: the course's server
// allows no inline script (autograder/formgrade.py), so the templates' `var x = "...";` blocks
// are data, made globals here. Elements with data-onclick="f" call the global f() when clicked.
(function () {
  var data = document.currentScript.previousElementSibling;
  var vars = JSON.parse(data.textContent);
  Object.keys(vars).forEach(function (name) { window[name] = vars[name]; });
  if (window.formgraderClicksBound) return;
  window.formgraderClicksBound = true;
  document.addEventListener("click", function (event) {
    var target = event.target.closest ? event.target.closest("[data-onclick]") : null;
    if (target !== null && typeof window[target.getAttribute("data-onclick")] === "function") {
      event.preventDefault();
      window[target.getAttribute("data-onclick")]();
    }
  });
})();
