// Starts Swagger UI on /docs with the app's OpenAPI document. The online validator
// badge is off: it would send the spec to a third-party server.
(function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  window.ui = window.SwaggerUIBundle({
    url: root.getAttribute("data-spec-url"),
    dom_id: "#swagger-ui",
    layout: "BaseLayout",
    deepLinking: true,
    showExtensions: true,
    showCommonExtensions: true,
    validatorUrl: null,
    presets: [window.SwaggerUIBundle.presets.apis],
  });
})();
