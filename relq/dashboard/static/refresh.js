// Live refresh of the overview: every few seconds, fetch its table again and swap it in.
// Without JavaScript the page still works; it is only not refreshed.
(function () {
  "use strict";
  var box = document.getElementById("overview");
  if (!box || !window.fetch) return;
  var every = Math.max(1, parseFloat(box.dataset.every) || 5) * 1000;
  function refresh() {
    fetch(box.dataset.src, {headers: {"Accept": "text/html"}, cache: "no-store"})
      .then(function (response) {
        if (!response.ok) throw new Error(response.status + " " + response.statusText);
        return response.text();
      })
      .then(function (html) {
        box.innerHTML = html;
        box.classList.remove("stale");
        box.removeAttribute("title");
      })
      .catch(function (error) {
        box.classList.add("stale");
        box.title = "not refreshed: " + error.message;
      })
      .then(function () { setTimeout(refresh, every); });
  }
  setTimeout(refresh, every);
})();
