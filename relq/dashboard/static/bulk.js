// Bulk actions (bulk.py). On a list: "tick every row", and the ticked rows' count on their form, whose
// buttons wait for a tick. On a job's page: its progress, fetched again every second or so while the job
// runs and swapped in, until it ends. Without JavaScript the list's form still works (the dashboard says
// when no row is ticked) and the job's page reloads itself while the job runs.
(function () {
  "use strict";

  var picked = document.getElementById("picked");
  if (picked) {
    var boxes = Array.prototype.slice.call(document.querySelectorAll('input[name="pick"][form="picked"]'));
    var all = document.querySelector("input.pick-all");
    var said = picked.querySelector(".ticked");
    var buttons = picked.querySelectorAll("button");
    var update = function () {
      var n = boxes.filter(function (b) { return b.checked; }).length;
      said.textContent = n === 0 ? "No row ticked:" : n === 1 ? "The 1 ticked row:" : "The " + n + " ticked rows:";
      for (var i = 0; i < buttons.length; i++) buttons[i].disabled = n === 0;
      if (all) {
        all.checked = n > 0 && n === boxes.length;
        all.indeterminate = n > 0 && n < boxes.length;
      }
    };
    boxes.forEach(function (b) { b.addEventListener("change", update); });
    if (all && boxes.length) {
      all.hidden = false;
      all.addEventListener("change", function () {
        boxes.forEach(function (b) { b.checked = all.checked; });
        update();
      });
    }
    update();
  }

  var box = document.getElementById("bulk-progress");
  if (!box || !window.fetch) return;
  var every = Math.max(0.5, parseFloat(box.dataset.every) || 1) * 1000;
  var running = function () {
    var job = box.querySelector("[data-state]");
    return job && (job.dataset.state === "running" || job.dataset.state === "stopping");
  };
  // A dashboard that restarted has forgotten the job: what it did stands, its count is gone.
  var forgotten = function () {
    var line = document.createElement("p");
    line.className = "problem";
    line.setAttribute("role", "alert");
    line.textContent = "The dashboard no longer knows this job (it restarted): the items it touched stay as " +
      "they are, and it touches no more. Look at the list to see where things stand.";
    box.textContent = "";
    box.appendChild(line);
  };
  var poll = function () {
    if (!running()) return;
    fetch(box.dataset.src, {headers: {"Accept": "text/html"}, cache: "no-store"})
      .then(function (response) {
        if (response.status === 404) return forgotten();
        if (!response.ok) throw new Error(response.status + " " + response.statusText);
        return response.text().then(function (html) { box.innerHTML = html; });
      })
      .catch(function () { /* the dashboard did not answer: ask again at the next turn */ })
      .then(function () { setTimeout(poll, every); });
  };
  setTimeout(poll, every);
})();
