// Draws the entity graph of the page's JSON with Cytoscape.js (bundled, see
// make ui-assets). Without JavaScript the entity list below the graph is the page.
(function () {
  "use strict";
  var box = document.getElementById("graph");
  var source = document.getElementById("graph-data");
  if (!box || !source || typeof window.cytoscape !== "function") {
    if (box) { box.classList.add("no-js"); }
    return;
  }
  var data = JSON.parse(source.textContent);
  if (!data.nodes.length) { box.classList.add("no-js"); return; }
  var css = getComputedStyle(document.documentElement);
  var fg = css.getPropertyValue("--fg").trim() || "#1c2330";
  var line = css.getPropertyValue("--line").trim() || "#dde2e8";
  var accent = css.getPropertyValue("--accent").trim() || "#2f5fd0";
  var colours = { person: "#c0622f", name: "#c0622f", place: "#2f8f5b", location: "#2f8f5b",
                  gpe: "#2f8f5b", org: "#6b3fa0", organization: "#6b3fa0", self: "#2f5fd0",
                  role: "#9a3a62" };
  var cy = window.cytoscape({
    container: box,
    elements: data.nodes.concat(data.edges),
    wheelSensitivity: 0.3,
    style: [
      { selector: "node", style: {
          "label": "data(label)", "color": fg, "font-size": 11, "text-valign": "bottom",
          "text-margin-y": 4, "text-wrap": "ellipsis", "text-max-width": 120,
          "width": "mapData(mentions, 1, 10, 14, 34)", "height": "mapData(mentions, 1, 10, 14, 34)",
          "background-color": function (n) { return colours[n.data("type")] || "#5f6b7a"; } } },
      { selector: "node[?start]", style: { "border-width": 3, "border-color": accent } },
      { selector: "edge", style: { "width": "mapData(shared, 1, 5, 1, 5)", "line-color": line,
          "curve-style": "haystack", "opacity": 0.9 } },
      { selector: "node:selected", style: { "border-width": 3, "border-color": fg } }
    ],
    // the start entities in the middle, each further hop on a ring around them
    layout: { name: "concentric", animate: false, padding: 24, minNodeSpacing: 36,
              spacingFactor: 1.2,
              concentric: function (n) { return 10 - n.data("hops"); },
              levelWidth: function () { return 1; } }
  });
  cy.on("tap", "node", function (evt) {
    var href = evt.target.data("href");
    if (href) { window.location.assign(href); }
  });
  box.setAttribute("data-ready", "true");
})();
