// Formgrader's page variables, from the JSON block just before this script: the course's server
// allows no inline script (autograder/formgrade.py), so the templates' `var x = "...";` blocks
// are data, made globals here. An element with data-onclick="f" calls f() when clicked; f is
// one of nbgrader's functions named here (`let` makes no property of window: each is named).
(function () {
  var data = document.currentScript.previousElementSibling;
  var vars = JSON.parse(data.textContent);
  Object.keys(vars).forEach(function (name) { window[name] = vars[name]; });
  if (window.formgraderClicksBound) return;
  window.formgraderClicksBound = true;
  var handlers = {
    toggleAllNames: function () { return toggleAllNames(); },
    createAssignmentModal: function () { return createAssignmentModal(); },
    createStudentModal: function () { return createStudentModal(); }
  };
  document.addEventListener("click", function (event) {
    var target = event.target.closest ? event.target.closest("[data-onclick]") : null;
    var name = target === null ? null : target.getAttribute("data-onclick");
    if (name !== null && Object.prototype.hasOwnProperty.call(handlers, name)) {
      event.preventDefault();
      handlers[name]();
    }
  });
})();
