// Progressive enhancement only: every page works without this file.
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  // "Expand all" on the search page: opens (or closes) every hit's explanation.
  document.querySelectorAll("[data-toggle-all]").forEach(function (button) {
    button.addEventListener("click", function () {
      var all = document.querySelectorAll(button.getAttribute("data-toggle-all"));
      var open = Array.prototype.some.call(all, function (d) { return !d.open; });
      all.forEach(function (d) { d.open = open; });
      button.textContent = open ? "Collapse all" : "Expand all";
    });
  });
})();
