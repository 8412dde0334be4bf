// Cultivar leaderboard: sortable tables, filters, charts, instance search.
// Plain DOM code, no dependencies; every text is set with textContent, never as HTML.
(function () {
  "use strict";
  window.Cultivar = window.Cultivar || {};

  function cellValue(row, index, kind) {
    var cell = row.children[index];
    var raw = cell ? (cell.getAttribute("data-value") || cell.textContent) : "";
    if (kind === "num") {
      var number = parseFloat(raw);
      return isNaN(number) ? null : number;
    }
    return raw.toLowerCase();
  }

  function sortTable(table, index, kind, header) {
    var body = table.tBodies[0];
    var descending = header.getAttribute("aria-sort") !== "descending";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, index, kind), y = cellValue(b, index, kind);
      if (x === null && y === null) { return 0; }
      if (x === null) { return 1; }   // empty values last, whatever the direction
      if (y === null) { return -1; }
      var order = x < y ? -1 : (x > y ? 1 : 0);
      return descending ? -order : order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(header.parentNode.children, function (th) {
      th.setAttribute("aria-sort", "none");
    });
    header.setAttribute("aria-sort", descending ? "descending" : "ascending");
  }

  // Header buttons sort the table (a table built later calls this itself).
  function makeSortable(table) {
    var headers = table.tHead ? table.tHead.rows[0].children : [];
    Array.prototype.forEach.call(headers, function (th, index) {
      var button = th.querySelector("button[data-sort]");
      if (!button || button.getAttribute("data-bound")) { return; }
      button.setAttribute("data-bound", "yes");
      button.addEventListener("click", function () {
        sortTable(table, index, button.getAttribute("data-sort"), th);
      });
    });
  }
  window.Cultivar.makeSortable = makeSortable;
  document.querySelectorAll("table.sortable").forEach(makeSortable);

  document.querySelectorAll("form.filters[data-table]").forEach(function (form) {
    var table = document.getElementById(form.getAttribute("data-table"));
    var output = form.querySelector("output.count");
    function apply() {
      var type = form.elements.type.value, family = form.elements.family.value;
      var max = parseFloat(form.elements.max_params.value);
      var min = parseFloat(form.elements.min_params.value);
      var flagged = form.elements.flagged ? form.elements.flagged.value : "";
      var shown = 0, rows = table.tBodies[0].rows;
      Array.prototype.forEach.call(rows, function (row) {
        var params = parseFloat(row.getAttribute("data-params"));
        var visible = (!type || row.getAttribute("data-type") === type) &&
          (!family || row.getAttribute("data-family") === family) &&
          (isNaN(max) || (!isNaN(params) && params <= max)) &&
          (isNaN(min) || (!isNaN(params) && params >= min)) &&
          (!flagged || row.getAttribute("data-flagged") === flagged);
        row.hidden = !visible;
        if (visible) { shown += 1; }
      });
      if (output) { output.textContent = shown + " of " + rows.length + " models shown"; }
    }
    form.addEventListener("input", apply);
    form.addEventListener("change", apply);
    form.addEventListener("submit", function (event) { event.preventDefault(); apply(); });
    apply();
  });

  // Static instance lists (locale pages): search by id or text.
  function filterInstances(target) {
    var container = document.getElementById(target);
    if (!container || container.getAttribute("data-dynamic")) { return; }
    var search = document.querySelector('.instance-filter[data-target="' + target + '"]');
    var needle = search ? search.value.trim().toLowerCase() : "";
    var shown = 0, items = container.querySelectorAll("article.instance");
    items.forEach(function (item) {
      var matches = !needle || item.getAttribute("data-search") === needle ||
        item.textContent.toLowerCase().indexOf(needle) !== -1;
      item.hidden = !matches;
      if (!item.hidden) { shown += 1; }
    });
    var output = container.parentNode.querySelector("output.count");
    if (output) { output.textContent = shown + " of " + items.length + " instances shown"; }
  }
  document.querySelectorAll(".instance-filter").forEach(function (input) {
    input.addEventListener("input", function () { filterInstances(input.getAttribute("data-target")); });
  });

  // Charts: specs are shards (data/charts/<id>.js), drawn once the page has loaded.
  if (window.vegaEmbed && window.Cultivar.load) {
    document.querySelectorAll("div.vega[data-chart]").forEach(function (target) {
      var id = target.getAttribute("data-chart");
      window.Cultivar.load("chart/" + id).then(function (spec) {
        return window.vegaEmbed(target, spec, { actions: false, renderer: "svg" });
      }).catch(function (error) {
        target.textContent = "The chart could not be drawn (" + error.message + "); see the static SVG.";
      });
    });
  }
}());
