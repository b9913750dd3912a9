// Live refresh of the overview: every few seconds, fetch its table again and swap it in.
// Without JavaScript the page still works; it is only not refreshed.
// While the database is away the dashboard answers 503 with the last figures it read, greyed under a
// banner (an X-Relq-Outage header says so): swapped in like any answer, so the banner comes with the
// first refresh after the database goes and goes with the first one after it answers again. When the
// dashboard itself does not answer, this script puts a banner of its own over the figures it has,
// with the time of the last answer, and keeps asking: it never stops polling.
(function () {
  "use strict";
  var box = document.getElementById("overview");
  if (!box || !window.fetch) return;
  var every = Math.max(1, parseFloat(box.dataset.every) || 5) * 1000;
  var answered = new Date();  // the last answer: this page's own load, then each refresh's

  function utc(date) {
    return date.toISOString().slice(11, 19) + " UTC";
  }

  function unanswered(error) {
    var banner = document.getElementById("unanswered");
    if (!banner) {
      banner = document.createElement("div");
      banner.id = "unanswered";
      banner.className = "outage";
      banner.setAttribute("role", "alert");
      box.insertBefore(banner, box.firstChild);
    }
    banner.textContent = "The dashboard has not answered since " + utc(answered) + " (" + error.message +
      "): the figures below are what it showed then, and are not live. This page keeps trying.";
    box.classList.add("stale");
  }

  function refresh() {
    fetch(box.dataset.src, {headers: {"Accept": "text/html"}, cache: "no-store"})
      .then(function (response) {
        if (!response.ok && !response.headers.get("X-Relq-Outage")) {
          throw new Error(response.status + " " + response.statusText);
        }
        return response.text();
      })
      .then(function (html) {
        box.innerHTML = html;
        box.classList.remove("stale");
        answered = new Date();
      })
      .catch(unanswered)
      .then(function () { setTimeout(refresh, every); });
  }
  setTimeout(refresh, every);
})();
