// The Query page: DuckDB-Wasm (shipped with the site: static/query/, see
// cultivar_assets/site/query_engine.py) over the published tables, a database file
// (data/query/published.duckdb.gz) attached READ_ONLY: DuckDB itself refuses to change them.
// The worker and the WebAssembly module are stored gzip-compressed and decompressed here; the
// engine is then locked (no extensions, no files, no URLs). Results and errors are shown as text.
(function () {
  "use strict";
  var app = document.getElementById("query-app");
  if (!app) { return; }
  var C = window.Cultivar, CSV = window.CultivarCsv, root = C.root;
  var status = document.getElementById("query-status");
  var form = document.getElementById("query-form"), sqlBox = document.getElementById("query-sql");
  var runButton = document.getElementById("query-run");
  var errorBox = document.getElementById("query-error");
  var summary = document.getElementById("query-summary");
  var table = document.getElementById("query-result");
  var loadForm = document.getElementById("translations-form");
  var SHOWN = 1000;
  var con = null, last = null, loadedModels = {};

  if (location.protocol === "file:") {
    C.say(status, "The Query page runs DuckDB in a Web Worker with WebAssembly, which browsers " +
      "do not load from files opened from disk. Serve the site instead: run `cultivar serve` " +
      "and open http://127.0.0.1:8000/query.html (any static web server works too).", "error");
    return;
  }
  if (typeof DecompressionStream === "undefined" || typeof WebAssembly === "undefined" ||
      typeof Worker === "undefined") {
    C.say(status, "This browser lacks what the Query page needs (WebAssembly, Web Workers, " +
      "DecompressionStream); use a current Chrome, Edge, Firefox or Safari.", "error");
    return;
  }

  // The bytes of a .gz file, decompressed here unless the web server already did (some send
  // .gz files with Content-Encoding: gzip, and the browser then decodes them itself).
  function gunzip(url) {
    return fetch(url).then(function (response) {
      if (!response.ok) { throw new Error("could not load " + url + " (" + response.status + ")"); }
      return response.arrayBuffer();
    }).then(function (buffer) {
      var bytes = new Uint8Array(buffer);
      if (bytes.length < 2 || bytes[0] !== 0x1f || bytes[1] !== 0x8b) { return bytes; }
      var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      return new Response(stream).arrayBuffer().then(function (b) { return new Uint8Array(b); });
    });
  }
  function blobUrl(bytes, type) { return URL.createObjectURL(new Blob([bytes], { type: type })); }

  function statements(text) {
    return text.split(/;\s*(?:\n|$)/).map(function (s) { return s.trim(); })
      .filter(function (s) { return s && !/^(--[^\n]*\n?)+$/.test(s); });
  }

  // A decimal's unscaled integer text with `scale` digits after the point, as a number when
  // it has at most 15 significant digits (else as exact text).
  function decimal(digits, scale) {
    var negative = digits.charAt(0) === "-", body = negative ? digits.slice(1) : digits;
    while (body.length <= scale) { body = "0" + body; }
    var text = (negative ? "-" : "") + (scale ? body.slice(0, body.length - scale) + "." +
      body.slice(body.length - scale) : body);
    return body.replace(/^0+/, "").length <= 15 ? Number(text) : text;
  }

  function plain(value, typeName, scale) {
    if (value === null || value === undefined) { return null; }
    if (/^(Timestamp|Date)/.test(typeName) && typeof value === "number") {
      return new Date(value).toISOString().replace("T", " ").replace(/\.000Z$/, "");
    }
    if (typeof value === "bigint") {
      return value <= BigInt(Number.MAX_SAFE_INTEGER) && value >= -BigInt(Number.MAX_SAFE_INTEGER)
        ? Number(value) : value.toString();
    }
    if (value instanceof Date) { return value.toISOString(); }
    if (typeof value === "object") {
      if (typeof value.toArray === "function") {
        return Array.from(value.toArray(), function (v) { return plain(v, ""); });
      }
      if (typeof value.toJSON === "function") {
        var object = value.toJSON();
        if (typeof object === "string") {  // a decimal: its unscaled integer as JSON text
          var text = /^".*"$/.test(object) ? JSON.parse(object) : object;
          return scale === undefined ? text : decimal(text, scale);
        }
        if (object === null || typeof object !== "object") { return object; }
        var out = {};
        Object.keys(object).forEach(function (k) { out[k] = plain(object[k], ""); });
        return out;
      }
    }
    return value;
  }

  // A value as the table shows it: numbers rounded for reading (our choice: at most 4 digits
  // after the point, 3 significant digits below 0.001); the cell's data-value, its title and
  // the downloads keep the full value.
  function display(value) {
    if (value === null) { return "NULL"; }
    if (typeof value === "object") { return JSON.stringify(value); }
    if (typeof value === "number" && isFinite(value) && !Number.isInteger(value)) {
      if (Math.abs(value) < 0.001) { return value.toPrecision(3); }
      return String(Number(value.toFixed(4)));
    }
    return String(value);
  }

  // DuckDB's message, once: its "LINE n: …" excerpt with the caret can come twice (the parser's
  // and the binder's copy); shown in a <pre>, so the caret stands under its character.
  function errorText(message) {
    var seen = {};
    return String(message || "").split(/\n\s*\n/).filter(function (block) {
      var key = block.replace(/\s+$/, "");
      if (seen[key]) { return false; }
      seen[key] = true;
      return key !== "";
    }).join("\n\n").replace(/\s+$/, "");
  }

  function clearResult() {
    table.tHead.rows[0].textContent = ""; table.tBodies[0].textContent = "";
    summary.textContent = "";
    last = null;
    document.querySelectorAll("button[data-download]").forEach(function (b) { b.disabled = true; });
  }

  function showError(text) {
    clearResult();
    errorBox.textContent = text;
    errorBox.hidden = false;
  }

  function render(result) {
    var fields = result.schema.fields;
    var columns = fields.map(function (f) { return f.name; });
    var types = fields.map(function (f) { return String(f.type); });
    var scales = fields.map(function (f) {
      return /^Decimal/.test(String(f.type)) ? f.type.scale : undefined; });
    var rows = result.toArray().map(function (row) {
      var object = row.toJSON(), out = {};
      columns.forEach(function (c, i) { out[c] = plain(object[c], types[i], scales[i]); });
      return out;
    });
    last = { columns: columns, rows: rows };
    var head = table.tHead.rows[0], body = table.tBodies[0];
    head.textContent = ""; body.textContent = "";
    columns.forEach(function (c, i) {
      var th = document.createElement("th"), button = document.createElement("button");
      th.scope = "col"; th.setAttribute("aria-sort", "none");
      button.type = "button";
      button.setAttribute("data-sort", /^(Int|Uint|Float|Decimal)/.test(types[i]) ? "num" : "text");
      button.textContent = c;
      th.appendChild(button); head.appendChild(th);
    });
    var fragment = document.createDocumentFragment();
    rows.slice(0, SHOWN).forEach(function (row) {
      var tr = document.createElement("tr");
      columns.forEach(function (c) {
        var td = document.createElement("td"), v = row[c];
        td.textContent = display(v);
        td.setAttribute("data-value", v === null ? "" : (typeof v === "object" ? JSON.stringify(v) : String(v)));
        if (typeof v === "number" && td.textContent !== String(v)) { td.title = String(v); }
        if (typeof v === "number") { td.className = "num"; }
        tr.appendChild(td);
      });
      fragment.appendChild(tr);
    });
    body.appendChild(fragment);
    C.makeSortable(table);
    summary.textContent = rows.length + (rows.length === 1 ? " row" : " rows") +
      (rows.length > SHOWN ? " (the first " + SHOWN + " shown; the downloads have all)" : "");
    document.querySelectorAll("button[data-download]").forEach(function (b) { b.disabled = false; });
  }

  function run() {
    if (!con) { return; }
    errorBox.hidden = true; errorBox.textContent = "";
    clearResult();
    summary.textContent = "Running…";
    runButton.disabled = true;
    con.query(sqlBox.value).then(render).catch(function (error) {
      var text = errorText(error.message);
      if (/database "published" which is attached in read-only mode/.test(text)) {
        text += "\n\nThe published tables are read-only on this page. Make your own copy to " +
          "change one, e.g. CREATE TABLE my_leaderboard AS SELECT * FROM leaderboard;";
      }
      showError(text);
    }).then(function () { runButton.disabled = false; });
  }

  function loadTranslations(slugs) {
    var out = loadForm.querySelector("output.count");
    var wanted = slugs.filter(function (s) { return !loadedModels[s]; });
    if (!wanted.length) { return Promise.resolve(); }
    out.textContent = "Loading " + wanted.length + " model(s)…";
    return C.load("index").then(function (index) {
      var bySlug = {};
      index.models.forEach(function (m) { bySlug[m.slug] = m; });
      return wanted.reduce(function (chain, slug) {
        return chain.then(function () {
          var model = bySlug[slug];
          return Promise.all(model.locales.map(function (locale) {
            return C.hyp(slug, locale);
          })).then(function (shards) { return insertModel(model.id, shards); })
            .then(function () { loadedModels[slug] = true; });
        });
      }, Promise.resolve());
    }).then(function () {
      out.textContent = Object.keys(loadedModels).length + " model(s) loaded into translations";
    }).catch(function (error) { out.textContent = error.message; });
  }

  function insertModel(modelId, shards) {
    var cols = { model_id: [], test_set: [], segment_id: [], hypothesis: [], raw_output: [],
                 cleaning_rules: [] }, seen = {};
    function add(testSet, id, hypothesis, raw, rules) {
      var key = testSet + "\u0000" + id;
      if (seen[key]) { return; }
      seen[key] = true;
      cols.model_id.push(modelId); cols.test_set.push(testSet); cols.segment_id.push(id);
      cols.hypothesis.push(hypothesis); cols.raw_output.push(raw === null ? hypothesis : raw);
      cols.cleaning_rules.push((rules || []).join("\u001f"));
    }
    shards.forEach(function (shard) {
      shard.items.forEach(function (item) {
        if (item[1] !== null) { add(shard.flores, item[0], item[1], item[2], item[3]); }
        add(shard.cultivar, item[0], item[4], item[5], item[6]);
      });
    });
    var arrow = window.CultivarDuckDB.tableFromArrays({
      model_id: cols.model_id, test_set: cols.test_set,
      segment_id: Int32Array.from(cols.segment_id), hypothesis: cols.hypothesis,
      raw_output: cols.raw_output, rules: cols.cleaning_rules });
    return con.insertArrowTable(arrow, { name: "hypotheses_staging", create: true })
      .then(function () { return con.query(app.getAttribute("data-insert")); })
      .then(function () { return con.query("DROP TABLE hypotheses_staging"); });
  }

  function start() {
    C.say(status, "Loading DuckDB-Wasm…");
    var engine = root + "static/query/";
    var names = app.getAttribute("data-tables").split(" ").concat(["segments"]);
    Promise.all([gunzip(engine + "duckdb-browser-eh.worker.js.gz"),
                 gunzip(engine + "duckdb-eh.wasm.gz"),
                 gunzip(root + "data/query/published.duckdb.gz")]).then(function (files) {
      var worker = new Worker(blobUrl(files[0], "text/javascript"));
      var db = new window.CultivarDuckDB.AsyncDuckDB({ log: function () {} }, worker);
      return db.instantiate(blobUrl(files[1], "application/wasm")).then(function () {
        return db.registerFileBuffer("published.duckdb", files[2]);
      }).then(function () { return db.connect(); });
    }).then(function (connection) {
      con = connection;
      C.say(status, "Loading " + names.length + " tables…");
      var setup = statements(document.getElementById("query-attach").textContent)
        .concat(statements(document.getElementById("query-translations-sql").textContent))
        .concat(statements(document.getElementById("query-lock").textContent));
      return setup.reduce(function (chain, sql) {
        return chain.then(function () { return con.query(sql); });
      }, Promise.resolve()).then(function () { return names; });
    }).then(function (names) {
      runButton.disabled = false;
      loadForm.querySelector("button[type=submit]").disabled = false;
      C.say(status, "Ready: " + names.length + " published tables (read-only) and the " +
        "translations view (DuckDB runs in this page; nothing is sent anywhere).");
      app.setAttribute("data-ready", "yes");
      run();  // the default query, on load
    }).catch(function (error) {
      C.say(status, "DuckDB-Wasm could not start: " + error.message, "error");
    });
  }

  form.addEventListener("submit", function (event) { event.preventDefault(); run(); });
  sqlBox.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) { event.preventDefault(); run(); }
  });
  document.querySelectorAll("button.example").forEach(function (button) {
    button.addEventListener("click", function () {
      sqlBox.value = document.getElementById("example-" + button.getAttribute("data-example")).textContent;
      run();
    });
  });
  document.querySelectorAll("button[data-download]").forEach(function (button) {
    button.addEventListener("click", function () {
      if (!last) { return; }
      if (button.getAttribute("data-download") === "csv") {
        CSV.download("query.csv", CSV.toCsv(last.columns, last.rows), "text/csv");
      } else {
        CSV.download("query.json", CSV.toJson(last.columns, last.rows), "application/json");
      }
    });
  });
  loadForm.addEventListener("submit", function (event) {
    event.preventDefault();
    var slugs = Array.prototype.filter.call(loadForm.elements.models.options, function (o) {
      return o.selected; }).map(function (o) { return o.value; });
    loadTranslations(slugs);
  });
  start();
}());
