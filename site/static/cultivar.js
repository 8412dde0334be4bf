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

  // Sort ``table`` by the column of ``header`` in ``direction`` ("ascending" / "descending");
  // empty values last, whatever the direction; ties keep their order (a stable sort).
  function sortTable(table, header, direction) {
    var body = table.tBodies[0];
    var index = Array.prototype.indexOf.call(header.parentNode.children, header);
    var button = header.querySelector("button[data-sort]");
    var kind = button ? button.getAttribute("data-sort") : "text";
    var descending = direction === "descending";
    var source = table.cultivarRows || Array.prototype.slice.call(body.rows);
    var rows = source.map(function (row, position) {
      return { row: row, value: cellValue(row, index, kind), position: position };
    });
    rows.sort(function (a, b) {
      var x = a.value, y = b.value;
      if (x === null && y === null) { return a.position - b.position; }
      if (x === null) { return 1; }
      if (y === null) { return -1; }
      var order = x < y ? -1 : (x > y ? 1 : 0);
      return (descending ? -order : order) || a.position - b.position;
    });
    if (table.cultivarRows) {  // a long table: its rows in order, the shown ones rendered
      table.cultivarRows = rows.map(function (r) { return r.row; });
      table.cultivarRender();
    } else {
      rows.forEach(function (r) { body.appendChild(r.row); });
    }
    Array.prototype.forEach.call(header.parentNode.children, function (th) {
      th.setAttribute("aria-sort", "none");
    });
    header.setAttribute("aria-sort", descending ? "descending" : "ascending");
  }

  // The direction a click gives: the other one on the sorted column; on another column, text
  // columns start ascending (A→Z) and numeric ones descending (best first). Our choice.
  function nextDirection(header) {
    var current = header.getAttribute("aria-sort");
    if (current === "ascending") { return "descending"; }
    if (current === "descending") { return "ascending"; }
    var button = header.querySelector("button[data-sort]");
    return button && button.getAttribute("data-sort") === "text" ? "ascending" : "descending";
  }

  // Header buttons sort the table (a table built later calls this itself); ``onSort`` (optional)
  // is told of each sort made by a click.
  function makeSortable(table, onSort) {
    var headers = table.tHead ? table.tHead.rows[0].children : [];
    Array.prototype.forEach.call(headers, function (th) {
      var button = th.querySelector("button[data-sort]");
      if (!button || button.getAttribute("data-bound")) { return; }
      button.setAttribute("data-bound", "yes");
      button.addEventListener("click", function () {
        sortTable(table, th, nextDirection(th));
        if (onSort) { onSort(th); }
      });
    });
  }
  window.Cultivar.makeSortable = makeSortable;
  window.Cultivar.sortTable = sortTable;

  function storedFlag(name) {
    try { return window.localStorage.getItem(name) === "yes"; } catch (e) { return false; }
  }
  function storeFlag(name, on) {
    try { window.localStorage.setItem(name, on ? "yes" : "no"); } catch (e) { /* storage off */ }
  }

  // The leaderboard (a filter form with data-table): sort, filters and search live in the page's
  // hash (#sort=delta_bleu&dir=descending&type=LLM&q=qwen), so a view can be shared, and Back /
  // Forward or an edited hash restore it; the view always follows the hash. Whether intervals are
  // shown is the reader's setting, remembered in localStorage, not part of the view.
  var FILTERS = ["q", "type", "family", "min_params", "max_params", "flagged"];

  // A long leaderboard (hundreds of models): the build puts the rows after the first 100 in a
  // <template> inside the tbody (parsed but never laid out). The board then keeps every row in
  // an array (table.cultivarRows), sorts and filters the array, and renders the first
  // PAGE_ROWS rows that pass the filters, with a button for the next ones: sorting a
  // 1,000-row table in the DOM took 0.5 s, most of it layout.
  var PAGE_ROWS = 100;

  function Board(form) {
    this.form = form;
    this.table = document.getElementById(form.getAttribute("data-table"));
    this.output = form.querySelector("output.count");
    var body = this.table.tBodies[0], more = body.querySelector("template[data-rows]");
    if (more) {
      var self = this;
      this.table.cultivarRows = Array.prototype.slice.call(body.rows).concat(
        Array.prototype.slice.call(more.content.children).filter(function (n) {
          return n.tagName === "TR"; }).map(function (row) { return document.adoptNode(row); }));
      more.remove();
      this.limit = PAGE_ROWS;
      this.table.cultivarRender = function () { self.render(); };
      this.moreButton = document.createElement("button");
      this.moreButton.type = "button";
      this.moreButton.className = "more-rows";
      this.moreButton.addEventListener("click", function () {
        self.limit += PAGE_ROWS;
        self.render();
      });
      var wrap = this.table.closest(".table-wrap") || this.table;
      wrap.parentNode.insertBefore(this.moreButton, wrap.nextSibling);
    }
    // no model passes the filters: a message under the header, with a button that clears them
    this.noMatch = document.createElement("p");
    this.noMatch.className = "no-match";
    this.noMatch.setAttribute("role", "status");
    this.noMatch.hidden = true;
    this.noMatch.appendChild(document.createTextNode("No model matches the search and filters. "));
    var clear = document.createElement("button");
    clear.type = "button";
    clear.textContent = "Clear the search and filters";
    this.noMatch.appendChild(clear);
    var box = this.table.closest(".table-wrap") || this.table;
    box.parentNode.insertBefore(this.noMatch, box.nextSibling);
    var board = this;
    clear.addEventListener("click", function () { board.clear(); });
    // on a narrow screen the filters other than the search start folded
    this.moreFilters = form.querySelector("details.more-filters");
    if (this.moreFilters && window.matchMedia && window.matchMedia("(max-width: 40rem)").matches) {
      this.moreFilters.open = false;
    }
    var sorted = this.table.querySelector("thead th[aria-sort='ascending'], thead th[aria-sort='descending']");
    this.defaultSort = sorted ? { key: sorted.getAttribute("data-key"),
      dir: sorted.getAttribute("aria-sort") } : null;
  }

  Board.prototype.header = function (key) {
    return this.table.querySelector('thead th[data-key="' + (window.CSS && CSS.escape ? CSS.escape(key) : key) + '"]');
  };

  Board.prototype.state = function () {
    var state = {}, form = this.form;
    FILTERS.forEach(function (name) {
      if (form.elements[name] && form.elements[name].value.trim() !== "") {
        state[name] = form.elements[name].value.trim();
      }
    });
    var sorted = this.table.querySelector("thead th[aria-sort='ascending'], thead th[aria-sort='descending']");
    if (sorted && !(this.defaultSort && sorted.getAttribute("data-key") === this.defaultSort.key &&
                    sorted.getAttribute("aria-sort") === this.defaultSort.dir)) {
      state.sort = sorted.getAttribute("data-key");
      state.dir = sorted.getAttribute("aria-sort");
    }
    return state;
  };

  Board.prototype.hashText = function () {
    var state = this.state();
    var parts = ["sort", "dir"].concat(FILTERS).filter(function (k) { return k in state; })
      .map(function (k) { return k + "=" + encodeURIComponent(state[k]); });
    return parts.length ? "#" + parts.join("&") : "";
  };

  // Write the view into the address: a new history entry for a choice (sort, a select), the
  // same entry while typing (search, parameter bounds).
  Board.prototype.record = function (push) {
    var hash = this.hashText();
    if (hash === (window.location.hash === "#" ? "" : window.location.hash)) { return; }
    var url = window.location.href.split("#")[0] + hash;
    try {
      if (push) { window.history.pushState(null, "", url); } else { window.history.replaceState(null, "", url); }
    } catch (e) { window.location.hash = hash; }  // some file:// setups refuse the history API
  };

  // Make the view what the hash says (unknown values are ignored: the defaults stand).
  Board.prototype.restore = function () {
    var hash = window.Cultivar.readHash ? window.Cultivar.readHash() : {};
    var form = this.form;
    FILTERS.forEach(function (name) {
      var field = form.elements[name];
      if (!field) { return; }
      var value = hash[name] || "";
      if (field.tagName === "SELECT" && value &&
          !Array.prototype.some.call(field.options, function (o) { return o.value === value; })) {
        value = "";
      }
      field.value = value;
    });
    var header = hash.sort ? this.header(hash.sort) : null;
    var dir = hash.dir === "ascending" || hash.dir === "descending" ? hash.dir : null;
    if (header && header.querySelector("button[data-sort]")) {
      sortTable(this.table, header, dir || nextDirection(header));
    } else if (this.defaultSort) {
      sortTable(this.table, this.header(this.defaultSort.key), this.defaultSort.dir);
    }
    this.apply();
  };

  Board.prototype.apply = function () {
    var form = this.form;
    var type = form.elements.type.value, family = form.elements.family.value;
    var max = parseFloat(form.elements.max_params.value);
    var min = parseFloat(form.elements.min_params.value);
    var flagged = form.elements.flagged ? form.elements.flagged.value : "";
    var needle = form.elements.q ? form.elements.q.value.trim().toLowerCase() : "";
    var shown = 0, rows = this.table.cultivarRows || this.table.tBodies[0].rows;
    Array.prototype.forEach.call(rows, function (row) {
      var params = parseFloat(row.getAttribute("data-params"));
      var name = (row.cells[0].getAttribute("data-value") || "").toLowerCase();
      var visible = (!type || row.getAttribute("data-type") === type) &&
        (!family || row.getAttribute("data-family") === family) &&
        (isNaN(max) || (!isNaN(params) && params <= max)) &&
        (isNaN(min) || (!isNaN(params) && params >= min)) &&
        (!flagged || row.getAttribute("data-flagged") === flagged) &&
        (!needle || name.indexOf(needle) !== -1);
      row.hidden = !visible;
      if (visible) { shown += 1; }
    });
    if (this.output) { this.output.textContent = shown + " of " + rows.length + " models shown"; }
    this.noMatch.hidden = shown > 0 || rows.length === 0;
    if (this.moreFilters && FILTERS.some(function (name) {
          return name !== "q" && form.elements[name] && form.elements[name].value.trim() !== "";
        })) {
      this.moreFilters.open = true;  // a filter in force is never folded away
    }
    if (this.table.cultivarRows) {
      this.limit = PAGE_ROWS;
      this.render();
    }
    this.fit();
  };

  // Every filter and the search emptied (a new history entry, as a choice is).
  Board.prototype.clear = function () {
    var form = this.form;
    FILTERS.forEach(function (name) { if (form.elements[name]) { form.elements[name].value = ""; } });
    this.apply();
    this.record(true);
    if (form.elements.q) { form.elements.q.focus(); }
  };

  // A long table: the first ``limit`` rows that pass the filters, in the array's order.
  Board.prototype.render = function () {
    var body = this.table.tBodies[0], fragment = document.createDocumentFragment();
    var visible = this.table.cultivarRows.filter(function (row) { return !row.hidden; });
    visible.slice(0, this.limit).forEach(function (row) { fragment.appendChild(row); });
    body.textContent = "";
    body.appendChild(fragment);
    var rest = visible.length - this.limit;
    this.moreButton.hidden = rest <= 0;
    this.moreButton.textContent = "Show " + Math.min(rest, PAGE_ROWS) + " more (" +
      Math.min(this.limit, visible.length) + " of " + visible.length + " shown)";
  };

  // Whether the table is wider than its box (then the box scrolls sideways at any width;
  // style.css, .overflows).
  Board.prototype.fit = function () {
    var wrap = this.table.closest(".table-wrap.board");
    if (wrap) { wrap.classList.toggle("overflows", this.table.scrollWidth > wrap.clientWidth + 1); }
  };

  Board.prototype.start = function () {
    var self = this, form = this.form, table = this.table;
    window.addEventListener("resize", function () { self.fit(); });
    makeSortable(table, function () { self.record(true); });
    var intervals = form.elements.intervals;
    if (intervals) {
      intervals.checked = storedFlag("cultivar.leaderboard.intervals");
      table.classList.toggle("compact", !intervals.checked);
      intervals.addEventListener("change", function () {
        table.classList.toggle("compact", !intervals.checked);
        storeFlag("cultivar.leaderboard.intervals", intervals.checked);
      });
    }
    form.addEventListener("input", function (event) {
      if (event.target === intervals) { return; }
      self.apply();
      self.record(event.target.tagName === "SELECT");
    });
    form.addEventListener("change", function (event) {
      if (event.target === intervals || event.target.tagName === "SELECT") { return; }
      self.apply();
      self.record(false);
    });
    form.addEventListener("submit", function (event) { event.preventDefault(); self.apply(); });
    window.addEventListener("popstate", function () { self.restore(); });
    window.addEventListener("hashchange", function () { self.restore(); });
    this.restore();
  };

  var boards = document.querySelectorAll("form.filters[data-table]");
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var mine = Array.prototype.some.call(boards, function (f) { return f.getAttribute("data-table") === table.id; });
    if (!mine) { makeSortable(table); }
  });
  boards.forEach(function (form) { new Board(form).start(); });

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

  // An open "not separable" list stays inside the part of the table's box in the window (the
  // window, where the board has no box): below its "≈ n" where there is room, else on the side
  // with more room, scrolling within itself when even that is short.
  function placePopover(details) {
    var popover = details.querySelector(".popover");
    if (!popover || !details.open) { return; }
    var wrap = details.closest(".table-wrap");
    var scrolls = wrap && getComputedStyle(wrap).overflowY !== "visible";
    var box = scrolls ? wrap.getBoundingClientRect() : { top: 0, bottom: window.innerHeight };
    var top = Math.max(box.top, 0), bottom = Math.min(box.bottom, window.innerHeight);
    var anchor = details.getBoundingClientRect();
    popover.classList.remove("up");
    popover.style.maxHeight = "";
    var below = bottom - anchor.bottom - 8, above = anchor.top - top - 8;
    var height = popover.getBoundingClientRect().height;
    if (height > below && above > below) { popover.classList.add("up"); }
    popover.style.maxHeight = Math.max(below, above, 48) + "px";
  }

  // The leaderboard's "not separable from" lists, from their shard when one is first opened
  // (data/separable.js: at 1,000 models the lists are most of the rows' bytes; site_pages.py).
  document.querySelectorAll("details.separable[data-separable]").forEach(function (details) {
    details.addEventListener("toggle", function () {
      placePopover(details);
      if (!details.open || details.hasAttribute("data-filled") || !window.Cultivar.load) { return; }
      details.setAttribute("data-filled", "");
      var popover = details.querySelector(".popover");
      window.Cultivar.load("separable").then(function (payload) {
        var names = payload.delta_bleu[details.getAttribute("data-separable")] || [];
        popover.textContent = "Not separable from: " + names.join(", ");
        placePopover(details);
      }).catch(function (error) {
        popover.textContent += " (" + error.message + ")";
      });
    });
  });
  // Escape closes an open list and puts the focus back on its "≈ n".
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") { return; }
    document.querySelectorAll("details.separable[open]").forEach(function (details) {
      details.open = false;
      var summary = details.querySelector("summary");
      if (summary && details.contains(document.activeElement)) { summary.focus(); }
    });
  });

  // Can this browser draw the page's text in each locale language? As the annotation tools
  // check (static/tool-common.js, checkScript), with the same check (static/script-check.js):
  // each distinct letter of the elements with that lang, in their font. The notice (base.html.j2, #script-notice) names the languages, how many letters, and
  // what to install; pages that add text later (the segment browser) call it again.
  var undrawable = window.cultivarUndrawable;  // static/script-check.js

  function checkScripts() {
    var notice = document.getElementById("script-notice");
    if (!notice) { return; }
    var notes = JSON.parse(notice.getAttribute("data-scripts") || "{}");
    var problems = [], missingTotal = 0;
    Object.keys(notes).sort().forEach(function (lang) {
      var elements = Array.prototype.filter.call(document.querySelectorAll("[lang]"),
        function (element) { return element.getAttribute("lang") === lang; });
      if (!elements.length) { return; }
      var seen = {}, letters = [];
      elements.forEach(function (element) {
        Array.from(element.textContent).forEach(function (character) {
          if (!seen[character] && /\p{L}/u.test(character)) { seen[character] = true; letters.push(character); }
        });
      });
      var missing = undrawable(letters, window.getComputedStyle(elements[0]).fontFamily);
      if (missing.length) {
        missingTotal += missing.length;
        problems.push(notes[lang].language + " (" + missing.length + " of its " + letters.length +
          " different letters here): install " + notes[lang].advice);
      }
    });
    notice.setAttribute("data-missing", String(missingTotal));
    notice.textContent = problems.length ? "This browser cannot draw some of this page's " +
      "text: it shows it as empty boxes. " + problems.join("; ") + "; then reload this page." : "";
    notice.hidden = !problems.length;
    notice.setAttribute("data-checked", "true");
  }
  window.Cultivar.checkScripts = checkScripts;
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", checkScripts);
  } else {
    checkScripts();
  }

  // A model card's rank interval, from the ranks shard (data/ranks.js: one file for every
  // card, so a new model does not rewrite every card whose rank moved; site_pages.py).
  var rankTargets = document.querySelectorAll("[data-rank-of]");
  if (rankTargets.length && window.Cultivar.load) {
    window.Cultivar.load("ranks").then(function (payload) {
      rankTargets.forEach(function (target) {
        var label = payload.rank_delta_bleu[target.getAttribute("data-rank-of")];
        if (label) {
          target.textContent = label + " by ∆BLEU (rank interval over the bootstrap resamples)";
        }
      });
    }).catch(function () { /* the link to the leaderboard stays */ });
  }

  // Charts: specs are shards (data/charts/<id>.js), drawn by Vega, whose script
  // (static/vega-bundle.js, named by <template id="vega-bundle">) is loaded once the page is
  // interactive: parsing its 0.9 MB took 0.3 s of a 1,000-model leaderboard's load.
  var chartTargets = document.querySelectorAll("div.vega[data-chart]");
  var vegaSource = document.getElementById("vega-bundle");
  function drawCharts() {
    chartTargets.forEach(function (target) {
      var id = target.getAttribute("data-chart");
      window.Cultivar.load("chart/" + id).then(function (spec) {
        return window.vegaEmbed(target, spec, { actions: false, renderer: "svg" });
      }).catch(function (error) {
        target.textContent = "The chart could not be drawn (" + error.message + "); see the static SVG.";
      });
    });
  }
  function loadVega() {
    if (window.vegaEmbed) { drawCharts(); return; }
    var script = document.createElement("script");
    script.src = vegaSource.getAttribute("data-src");
    script.onload = drawCharts;
    script.onerror = function () {
      chartTargets.forEach(function (target) {
        target.textContent = "The charts' script could not be loaded; see the static SVG.";
      });
    };
    document.body.appendChild(script);
  }
  if (chartTargets.length && vegaSource && window.Cultivar.load) {
    if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", loadVega);
    } else {
      loadVega();
    }
  }
}());
