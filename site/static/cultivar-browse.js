// The segment browser (browse.html) and the compare view (compare.html).
// Data: the shards of cultivar_assets/site/shards.py, loaded on demand. Every text is set with
// textContent (textdiff.js builds <mark> elements itself), never as HTML.
(function () {
  "use strict";
  var C = window.Cultivar, D = window.CultivarTextDiff, CSV = window.CultivarCsv;

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) { node.textContent = text; }
    return node;
  }

  // Spans stored as alternating strings (unchanged, changed, unchanged, ...).
  function altSpans(alt) {
    return alt.map(function (text, i) { return { text: text, changed: i % 2 === 1 }; })
      .filter(function (s) { return s.text !== ""; });
  }
  function altText(alt) { return alt ? alt.join("") : null; }

  function hidden(text) { return el("span", { "class": "hidden-original" }, text); }

  function fillSelect(select, options, value) {
    select.textContent = "";
    options.forEach(function (o) {
      var option = el("option", { value: o[0] }, o[1]);
      if (o[0] === value) { option.selected = true; }
      select.appendChild(option);
    });
  }

  // ---- the segment browser --------------------------------------------------------------
  function Browser(form) {
    this.form = form;
    this.status = document.getElementById("browser-status");
    this.container = document.getElementById("instances");
    this.count = document.querySelector(".browser-controls output.count");
    this.rows = [];
  }

  Browser.prototype.start = function () {
    var self = this;
    C.say(self.status, "Loading…");
    C.load("index").then(function (index) {
      self.index = index;
      self.models = {};
      index.models.forEach(function (m) { self.models[m.slug] = m; });
      self.locales = {};
      index.locales.forEach(function (l) { self.locales[l.locale] = l; });
      if (!index.models.length) { C.say(self.status, "No translations in this build."); return; }
      ["model", "vs", "locale"].forEach(function (name) {
        self.form.elements[name].addEventListener("change", function () {
          if (name === "model") { self.fillLocales(self.form.elements.locale.value); }
          self.show(true);
        });
      });
      self.seen = C.onHashChange(function () { self.restore(); });
      self.restore();
    }).catch(function (error) { C.say(self.status, error.message, "error"); });
  };

  // The view the hash names (unknown models and locales: the first ones).
  Browser.prototype.restore = function () {
    var hash = C.readHash(), index = this.index, self = this;
    var model = this.models[hash.model] ? hash.model : index.models[0].slug;
    fillSelect(this.form.elements.model, index.models.map(function (m) {
      return [m.slug, m.id]; }), model);
    fillSelect(this.form.elements.vs, [["", "(none)"]].concat(index.models.map(function (m) {
      return [m.slug, m.id]; })), self.models[hash.vs] ? hash.vs : "");
    this.fillLocales(hash.locale);
    this.show(false);
  };

  Browser.prototype.fillLocales = function (wanted) {
    var model = this.models[this.form.elements.model.value], self = this;
    var locales = model.locales.length ? model.locales : [];
    fillSelect(this.form.elements.locale, locales.map(function (l) {
      var info = self.locales[l];
      return [l, l + " (" + info.language_name + ", " + info.location + ")"];
    }), locales.indexOf(wanted) >= 0 ? wanted : locales[0]);
  };

  Browser.prototype.show = function (push) {
    var self = this, f = this.form.elements;
    var model = f.model.value, vs = f.vs.value, locale = f.locale.value;
    C.writeHash({ model: model, locale: locale, vs: vs }, push);
    this.seen();
    if (!locale) { C.say(self.status, "This model has no Cultivar translations."); return; }
    var slugs = [model].concat(vs && vs !== model ? [vs] : []);
    var missing = slugs.filter(function (s) { return self.models[s].locales.indexOf(locale) < 0; });
    C.say(self.status, "Loading " + locale + "…");
    var wanted = [C.load("locale/" + locale)].concat(slugs.filter(function (s) {
      return missing.indexOf(s) < 0; }).map(function (s) { return C.hyp(s, locale); }));
    Promise.all(wanted).then(function (shards) {
      if (f.model.value !== model || f.locale.value !== locale || f.vs.value !== vs) { return; }
      self.render(shards[0], shards.slice(1), missing.map(function (s) { return self.models[s].id; }));
    }).catch(function (error) { C.say(self.status, error.message, "error"); });
  };

  Browser.prototype.render = function (localeShard, hypShards, missing) {
    var self = this, info = this.locales[localeShard.locale], lang = info.language;
    var byModel = hypShards.map(function (shard) {
      var map = {};
      shard.items.forEach(function (item) { map[item[0]] = item; });
      return { model: shard.model, items: map, flores: shard.flores, cultivar: shard.cultivar };
    });
    this.container.textContent = "";
    this.rows = [];
    var fragment = document.createDocumentFragment();
    localeShard.items.forEach(function (inst) {
      var id = inst[0];
      var outputs = byModel.map(function (m) { return { model: m.model, item: m.items[id] }; })
        .filter(function (o) { return o.item; });
      if (!outputs.length) { return; }
      fragment.appendChild(self.instance(localeShard, inst, outputs, lang));
    });
    this.container.appendChild(fragment);
    var names = byModel.map(function (m) { return m.model; }).join(" and ");
    C.say(this.status, localeShard.locale + ": " + names + (missing.length ? " (" +
      missing.join(", ") + ": no translations of this locale)" : ""));
    this.filter();
    if (C.checkScripts) { C.checkScripts(); }  // the locale's text is on the page now
  };

  Browser.prototype.instance = function (shard, inst, outputs, lang) {
    var hiddenText = this.index.hidden_output, locale = shard.locale, id = inst[0];
    var article = el("article", { "class": "instance", id: "i" + id, "data-search": String(id) });
    article.appendChild(el("h2", {}, locale + "_" + id));
    var table = el("table", { "class": "pair" });
    var caption = el("caption", { "class": "visually-hidden" }, "Instance " + id);
    table.appendChild(caption);
    var head = el("thead"), hr = el("tr");
    hr.appendChild(el("th", { scope: "col" }));
    hr.appendChild(el("th", { scope: "col" }, "Original (FLORES)"));
    hr.appendChild(el("th", { scope: "col" }, "Localised (Cultivar)"));
    head.appendChild(hr);
    table.appendChild(head);
    var body = el("tbody");
    var notShown = this.index.hidden_original;
    [["Source", inst[1], inst[2], lang], ["Reference", inst[3], inst[4], "en"]].forEach(function (r) {
      var tr = el("tr"), a = el("td", { lang: r[3] }), b = el("td", { lang: r[3] });
      tr.appendChild(el("th", { scope: "row" }, r[0]));
      if (r[1]) { D.render(a, altSpans(r[1])); } else { a.appendChild(hidden(notShown)); }
      D.render(b, altSpans(r[2]));
      tr.appendChild(a); tr.appendChild(b);
      body.appendChild(tr);
    });
    var rawDiffers = false, record = {
      instance_id: id, locale: locale, source_original: altText(inst[1]),
      source_localised: altText(inst[2]), reference_original: altText(inst[3]),
      reference_localised: altText(inst[4]) };
    var several = outputs.length > 1;
    outputs.forEach(function (o, n) {
      var item = o.item, hypO = item[1], rawO = item[2], hypL = item[4], rawL = item[5];
      var tr = el("tr", { "class": "hyp" + (n ? " vs" : "") });
      tr.appendChild(el("th", { scope: "row" }, several ? "Translation: " + o.model : "Translation"));
      var a = el("td", { lang: "en" }), b = el("td", { lang: "en" });
      if (hypO === null) {
        a.appendChild(el("em", {}, "(no FLORES test set for this language)"));
        b.textContent = hypL;
      } else if (hypO === hiddenText) {
        a.appendChild(hidden(hiddenText));
        b.textContent = hypL;
      } else {
        var spans = D.wordDiff(hypO, hypL, "word");  // translations are English: word mode
        D.render(a, spans[0]); D.render(b, spans[1]);
      }
      tr.appendChild(a); tr.appendChild(b);
      body.appendChild(tr);
      var differsO = rawO !== null && hypO !== null && rawO.trim() !== hypO;
      var differsL = rawL !== null && rawL.trim() !== hypL;
      if (differsO || differsL) {
        rawDiffers = true;
        var raw = el("tr", { "class": "raw" + (n ? " vs" : "") });
        raw.appendChild(el("th", { scope: "row" }, several ? "Raw output: " + o.model : "Raw output"));
        var ra = el("td"), rb = el("td");
        if (differsO) { ra.appendChild(el("pre", {}, rawO)); }
        if (differsO && item[3]) { ra.appendChild(el("p", { "class": "rules" }, "cleaning: " + item[3].join(", "))); }
        if (differsL) { rb.appendChild(el("pre", {}, rawL)); }
        if (differsL && item[6]) { rb.appendChild(el("p", { "class": "rules" }, "cleaning: " + item[6].join(", "))); }
        raw.appendChild(ra); raw.appendChild(rb);
        body.appendChild(raw);
      }
      var prefix = n ? "vs_" : "";
      record[prefix + "model"] = o.model;
      record[prefix + "hypothesis_original"] = hypO;
      record[prefix + "hypothesis_localised"] = hypL;
      record[prefix + "raw_output_original"] = rawO === null ? hypO : rawO;
      record[prefix + "raw_output_localised"] = rawL === null ? hypL : rawL;
    });
    table.appendChild(body);
    article.appendChild(table);
    article.setAttribute("data-raw-differs", rawDiffers ? "yes" : "no");
    this.rows.push({ node: article, record: record });
    return article;
  };

  Browser.prototype.filter = function () {
    var search = document.querySelector(".instance-filter"), raw = document.querySelector(".raw-filter");
    var needle = search ? search.value.trim().toLowerCase() : "", shown = 0;
    this.rows.forEach(function (row) {
      var item = row.node;
      var matches = !needle || item.getAttribute("data-search") === needle ||
        item.textContent.toLowerCase().indexOf(needle) !== -1;
      var rawOk = !raw || !raw.checked || item.getAttribute("data-raw-differs") === "yes";
      item.hidden = !(matches && rawOk);
      if (!item.hidden) { shown += 1; }
    });
    if (this.count) { this.count.textContent = shown + " of " + this.rows.length + " instances shown"; }
  };

  Browser.prototype.download = function (format) {
    var records = this.rows.filter(function (r) { return !r.node.hidden; })
      .map(function (r) { return r.record; });
    if (!records.length) { return; }
    var columns = Object.keys(records[0]);
    var f = this.form.elements, name = "segments_" + f.model.value + (f.vs.value ? "_vs_" +
      f.vs.value : "") + "_" + f.locale.value;
    if (format === "csv") { CSV.download(name + ".csv", CSV.toCsv(columns, records), "text/csv"); }
    else { CSV.download(name + ".json", CSV.toJson(columns, records), "application/json"); }
  };

  // ---- the compare view ------------------------------------------------------------------
  // Its metrics are the index shard's "metrics" ([column key, label, name, formula] of every
  // metric the build's pages show, cultivar_assets/site/site_pages.py: shown_metrics); their ∆
  // are the stored ones. formula: "bleu", "chrf" or "ter" (site/compare_stats.py:
  // browser_formula), null where the difference gets no interval.

  function intervalText(row, key) {
    var value = row[key];
    if (value === null || value === undefined) { return "–"; }
    var text = value.toFixed(2), low = row[key + "_low"], high = row[key + "_high"];
    if (low !== undefined && low !== null && high !== undefined && high !== null) {
      text += " [" + low.toFixed(2) + ", " + high.toFixed(2) + "]";
    }
    return text;
  }

  // ---- the paired-bootstrap interval of a difference A − B (compare view) -------------
  // The site's resampling (data/bootstrap.js) and the two models' per-instance statistics
  // (data/stats/<slug>.js; cultivar_assets/site/compare_stats.py) give every replicate's ∆ of
  // both models as cultivar_assets/metrics/bootstrap.py computes them: the same weights, exact
  // integer sums, the scores of metrics/score_arrays.py; the interval is the percentile one of
  // the replicates' differences (bootstrap.py: difference_interval).
  function expandBlock(block) {
    var metric = block[0], ids = block[2], form = block[3], v = block[4], n = ids.length;
    var k = form === "x" ? v.length / n : (metric === "bleu" ? 10 : 18);
    var rows = new Float64Array(n * k), w = metric === "bleu" ? 6 : 8;
    for (var i = 0; i < n; i++) {
      var o = i * k, c = i * w, j;
      if (form === "x") { for (j = 0; j < k; j++) { rows[o + j] = v[i * k + j]; } }
      else if (metric === "bleu") {
        for (j = 0; j < 6; j++) { rows[o + j] = v[c + j]; }
        for (j = 1; j <= 4; j++) { rows[o + 5 + j] = Math.max(v[c] - j + 1, 0); }
      } else {
        for (j = 1; j <= 6; j++) {
          rows[o + 3 * (j - 1)] = Math.max(v[c] - j + 1, 0);
          rows[o + 3 * (j - 1) + 1] = Math.max(v[c + 1] - j + 1, 0);
          rows[o + 3 * (j - 1) + 2] = v[c + 1 + j];
        }
      }
    }
    var at = {};
    ids.forEach(function (id, i) { at[id] = i; });
    return { ids: ids, rows: rows, k: k, at: at };
  }

  function bleuScore(s, o) {  // score_arrays.bleu_from_stats (exp smoothing, order 4)
    var sys = s[o], ref = s[o + 1], bp = sys >= ref ? 1 : (sys > 0 ? Math.exp(1 - ref / sys) : 0);
    var used = true, halvings = 0, logSum = 0, any = false;
    for (var n = 0; n < 4; n++) {
      var correct = s[o + 2 + n], total = s[o + 6 + n], p;
      if (correct !== 0) { any = true; }
      used = used && total !== 0;
      if (!used) { p = 0; }
      else if (correct === 0) { halvings += 1; p = 100 / (Math.pow(2, halvings) * total); }
      else { p = 100 * correct / total; }
      logSum += p === 0 ? -9999999999 : Math.log(p);
    }
    return any ? bp * Math.exp(logSum / 4) : 0;
  }

  function chrfScore(s, o, k) {  // score_arrays.chrf_from_stats (beta 2)
    var sumP = 0, sumR = 0, counted = 0;
    for (var j = 0; j < k; j += 3) {
      var hyp = s[o + j], ref = s[o + j + 1], match = s[o + j + 2];
      if (hyp > 0 && ref > 0) { sumP += match / hyp; sumR += match / ref; counted += 1; }
    }
    var p = counted ? sumP / counted : 0, r = counted ? sumR / counted : 0;
    return p + r !== 0 ? 100 * (5 * p * r / (4 * p + r)) : 0;
  }

  function terScore(s, o) {  // registry.ter_from_stats
    var edits = s[o], ref = s[o + 1];
    return 100 * (ref > 0 ? edits / ref : (edits > 0 ? 1 : 0));
  }

  var SCORES = {
    bleu: function (s, o) { return bleuScore(s, o); },
    chrf: function (s, o, k) { return chrfScore(s, o, k); },
    ter: function (s, o) { return terScore(s, o); }
  };

  // Scores of one block on the instances `ids`, for every replicate (0: all instances once).
  function replicateScores(boot, block, formula, ids) {
    var U = boot.universe.length, B = boot.n_replicates, k = block.k;
    var sums = new Float64Array((B + 1) * k), out = new Float64Array(B + 1);
    ids.forEach(function (id) {
      var pos = boot.position[id], row = block.at[id] * k, b, j;
      for (j = 0; j < k; j++) { sums[j] += block.rows[row + j]; }
      for (b = 1; b <= B; b++) {
        var w = boot.w[(b - 1) * U + pos];
        if (w) { for (j = 0; j < k; j++) { sums[b * k + j] += w * block.rows[row + j]; } }
      }
    });
    for (var b = 0; b <= B; b++) {
      out[b] = SCORES[formula](sums, b * k, k);
    }
    return out;
  }

  // ∆ replicates of one model, metric and locale (null without both test sets).
  function deltaReplicates(boot, stats, metric, formula, flores, cultivar) {
    var f = stats[metric + "|" + flores], c = stats[metric + "|" + cultivar];
    if (!f || !c) { return null; }
    var shared = c.ids.filter(function (id) { return f.at[id] !== undefined; });
    if (!shared.length) { return null; }
    var fs = replicateScores(boot, f, formula, shared), cs = replicateScores(boot, c, formula, shared);
    for (var b = 0; b < fs.length; b++) { cs[b] = cs[b] - fs[b]; }
    return cs;
  }

  function differenceInterval(boot, da, db) {
    var values = [];
    for (var b = 1; b < da.length; b++) {
      var d = da[b] - db[b];
      if (isFinite(d)) { values.push(d); }
    }
    if (!values.length) { return null; }
    values.sort(function (x, y) { return x - y; });
    var k = Math.floor(values.length * (1 - boot.confidence) / 2 + 1e-9);
    return [values[k], values[values.length - 1 - k]];
  }

  function bootstrapData(boot) {
    if (!boot.position) {
      boot.position = {};
      boot.universe.forEach(function (id, j) { boot.position[id] = j; });
      var w = new Uint8Array(boot.weights.length);
      for (var i = 0; i < w.length; i++) { w[i] = parseInt(boot.weights[i], 36); }
      boot.w = w;
    }
    return boot;
  }

  function statsBlocks(shard) {
    var out = {};
    shard.blocks.forEach(function (block) { out[block[0] + "|" + block[1]] = expandBlock(block); });
    return out;
  }

  function Compare(form) {
    this.form = form;
    this.status = document.getElementById("compare-status");
    this.table = document.getElementById("compare-table");
    this.records = [];
  }

  Compare.prototype.start = function () {
    var self = this;
    C.load("index").then(function (index) {
      self.index = index;
      ["a", "b"].forEach(function (n) {
        self.form.elements[n].addEventListener("change", function () { self.show(true); });
      });
      self.seen = C.onHashChange(function () { self.restore(); });
      self.restore();
    }).catch(function (error) { C.say(self.status, error.message, "error"); });
  };

  // The two models the hash names (unknown ones: the first two of the build).
  Compare.prototype.restore = function () {
    var index = this.index, hash = C.readHash();
    var slugs = index.models.map(function (m) { return m.slug; });
    var options = index.models.map(function (m) { return [m.slug, m.id]; });
    fillSelect(this.form.elements.a, options, slugs.indexOf(hash.a) >= 0 ? hash.a : slugs[0]);
    fillSelect(this.form.elements.b, options, slugs.indexOf(hash.b) >= 0 ? hash.b : (slugs[1] || slugs[0]));
    this.show(false);
  };

  Compare.prototype.show = function (push) {
    var self = this, a = this.form.elements.a.value, b = this.form.elements.b.value;
    if (!a || !b) { C.say(self.status, "No models in this build."); return; }
    C.writeHash({ a: a, b: b }, push);
    this.seen();
    if (a === b) {
      this.table.tHead.rows[0].textContent = "";
      this.table.tBodies[0].textContent = "";
      if (this.table.tFoot) { this.table.tFoot.textContent = ""; }
      this.table.removeAttribute("data-intervals");
      this.records = [];
      this.pending = [];  // the previous pair's intervals stop
      C.say(self.status, "Model A and model B are the same model (" + this.form.elements.a.selectedOptions[0].textContent +
        "): choose two different models to compare.");
      return;
    }
    C.say(self.status, "Loading…");
    Promise.all([C.load("model/" + a), C.load("model/" + b)]).then(function (shards) {
      if (self.form.elements.a.value !== a || self.form.elements.b.value !== b) { return; }
      self.render(shards[0], shards[1], a, b);
    }).catch(function (error) { C.say(self.status, error.message, "error"); });
  };

  Compare.prototype.render = function (sa, sb, a, b) {
    var byLocale = {}, self = this;
    sa.deltas.forEach(function (r) { byLocale[r.locale] = { a: r }; });
    sb.deltas.forEach(function (r) { (byLocale[r.locale] = byLocale[r.locale] || {}).b = r; });
    var head = this.table.tHead.rows[0], body = this.table.tBodies[0];
    head.textContent = "";
    var labels = ["Locale"], metrics = this.index.metrics;
    metrics.forEach(function (m) {
      labels.push("∆" + m[1] + ": " + sa.model, "∆" + m[1] + ": " + sb.model, "∆" + m[1] + " difference");
    });
    labels.push("Segments");
    labels.forEach(function (label, i) {
      var th = el("th", { scope: "col", "aria-sort": "none" });
      if (i < labels.length - 1) {
        th.appendChild(el("button", { type: "button", "data-sort": i ? "num" : "text" }, label));
      } else { th.textContent = label; }
      head.appendChild(th);
    });
    body.textContent = "";
    this.records = [];
    this.pending = [];
    Object.keys(byLocale).sort().forEach(function (locale) {
      var pair = byLocale[locale], tr = el("tr"), record = { locale: locale };
      tr.appendChild(el("th", { scope: "row", "data-value": locale }, locale));
      metrics.forEach(function (m) {
        var key = "delta_" + m[0];
        var va = pair.a ? pair.a[key] : null, vb = pair.b ? pair.b[key] : null;
        [[pair.a, va], [pair.b, vb]].forEach(function (cell) {
          tr.appendChild(el("td", { "class": "num", "data-value": cell[1] === null ? "" : String(cell[1]) },
            cell[0] ? intervalText(cell[0], key) : "–"));
        });
        var d = va !== null && vb !== null ? va - vb : null;
        var cell = el("td", { "class": "num", "data-value": d === null ? "" : String(d),
                              "data-difference": key }, d === null ? "–" : d.toFixed(2));
        tr.appendChild(cell);
        record[key + "_a"] = va; record[key + "_b"] = vb; record[key + "_difference"] = d;
        if (d !== null && m[3]) {
          self.pending.push({ cell: cell, record: record, metric: m[2], formula: m[3], key: key, locale: locale });
        }
        ["_low", "_high"].forEach(function (s) {
          if (pair.a && pair.a[key + s] !== undefined) { record[key + s + "_a"] = pair.a[key + s]; }
          if (pair.b && pair.b[key + s] !== undefined) { record[key + s + "_b"] = pair.b[key + s]; }
        });
      });
      var link = el("a", { href: "browse.html#model=" + encodeURIComponent(a) + "&locale=" +
        encodeURIComponent(locale) + "&vs=" + encodeURIComponent(b) }, "side by side");
      var td = el("td"); td.appendChild(link); tr.appendChild(td);
      body.appendChild(tr);
      record.model_a = sa.model; record.model_b = sb.model;
      self.records.push(record);
    });
    this.overall(sa, sb);
    if (window.Cultivar.makeSortable) { window.Cultivar.makeSortable(this.table); }
    C.say(this.status, sa.model + " and " + sb.model + ": " + Object.keys(byLocale).length + " locales");
    this.intervals(a, b);
  };

  // The differences' intervals, one cell at a time (~30 ms each at 1,000 replicates), after the table
  // is shown; a site without the bootstrap's data keeps the differences without intervals.
  Compare.prototype.intervals = function (a, b) {
    var self = this, pending = this.pending, index = this.index;
    var info = {};
    index.locales.forEach(function (l) { info[l.locale] = l; });
    Promise.all([C.load("bootstrap"), C.load("stats/" + a), C.load("stats/" + b)]).then(function (shards) {
      var boot = bootstrapData(shards[0]), sa = statsBlocks(shards[1]), sb = statsBlocks(shards[2]);
      function next(i) {
        if (self.pending !== pending) { return; }  // another pair is shown now
        if (i >= pending.length) { self.table.setAttribute("data-intervals", "done"); return; }
        var job = pending[i], l = info[job.locale];
        if (l) {
          var da = deltaReplicates(boot, sa, job.metric, job.formula, l.flores, l.cultivar);
          var db = deltaReplicates(boot, sb, job.metric, job.formula, l.flores, l.cultivar);
          var interval = da && db ? differenceInterval(boot, da, db) : null;
          if (interval) {
            job.cell.textContent = job.cell.textContent + " [" + interval[0].toFixed(2) + ", " +
              interval[1].toFixed(2) + "]";
            job.cell.setAttribute("data-low", String(interval[0]));
            job.cell.setAttribute("data-high", String(interval[1]));
            job.record[job.key + "_difference_low"] = interval[0];
            job.record[job.key + "_difference_high"] = interval[1];
          }
        }
        setTimeout(function () { next(i + 1); }, 0);
      }
      next(0);
    }).catch(function () {
      self.table.setAttribute("data-intervals", "none");  // built without the bootstrap's data
    });
  };

  // The overall row (kept out of the sorting, in the table's foot): each model's leaderboard
  // ∆ with its interval, and their difference A − B.
  Compare.prototype.overall = function (sa, sb) {
    var foot = this.table.tFoot || this.table.createTFoot();
    foot.textContent = "";
    var oa = sa.overall || {}, ob = sb.overall || {}, tr = el("tr");
    tr.appendChild(el("th", { scope: "row" }, "Overall (leaderboard ∆)"));
    var record = { locale: null, model_a: sa.model, model_b: sb.model };
    this.index.metrics.forEach(function (m) {
      var key = "delta_" + m[0];
      var va = oa[key] === undefined ? null : oa[key], vb = ob[key] === undefined ? null : ob[key];
      tr.appendChild(el("td", { "class": "num" }, intervalText(oa, key)));
      tr.appendChild(el("td", { "class": "num" }, intervalText(ob, key)));
      var d = va !== null && vb !== null ? va - vb : null;
      tr.appendChild(el("td", { "class": "num" }, d === null ? "–" : d.toFixed(2)));
      record[key + "_a"] = va; record[key + "_b"] = vb; record[key + "_difference"] = d;
    });
    tr.appendChild(el("td", {}, ""));
    foot.appendChild(tr);
    this.records.push(record);
  };

  Compare.prototype.download = function (format) {
    if (!this.records.length) { return; }
    var columns = Object.keys(this.records[0]), name = "compare_" + this.form.elements.a.value +
      "_" + this.form.elements.b.value;
    if (format === "csv") { CSV.download(name + ".csv", CSV.toCsv(columns, this.records), "text/csv"); }
    else { CSV.download(name + ".json", CSV.toJson(columns, this.records), "application/json"); }
  };

  function bindDownloads(view) {
    document.querySelectorAll("button[data-download]").forEach(function (button) {
      button.addEventListener("click", function () { view.download(button.getAttribute("data-download")); });
    });
  }

  var browseForm = document.getElementById("browser-pick");
  if (browseForm) {
    var browser = new Browser(browseForm);
    document.querySelectorAll(".instance-filter, .raw-filter").forEach(function (input) {
      input.addEventListener("input", function () { browser.filter(); });
      input.addEventListener("change", function () { browser.filter(); });
    });
    bindDownloads(browser);
    browser.start();
  }
  var compareForm = document.getElementById("compare-pick");
  if (compareForm) {
    var compare = new Compare(compareForm);
    bindDownloads(compare);
    compare.start();
  }
}());
