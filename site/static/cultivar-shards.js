// Loading the site's data shards (cultivar_assets/site/shards.py): a shard is a script file that
// calls Cultivar.shard(key, base64) with gzip-compressed JSON. Script elements load from file://
// as well as over http, so the pages that use shards work without a server; the payload is
// decoded with DecompressionStream and parsed with JSON.parse (never evaluated).
(function () {
  "use strict";
  var root = document.documentElement.getAttribute("data-root") || "";
  var waiting = {};   // key -> [resolve, reject]
  var loaded = {};    // key -> Promise of the payload

  function decode(base64) {
    var binary = atob(base64), bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) { bytes[i] = binary.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(JSON.parse);
  }

  window.Cultivar = window.Cultivar || {};
  window.Cultivar.shard = function (key, base64) {
    var entry = waiting[key];
    if (!entry) { return; }
    delete waiting[key];
    decode(base64).then(entry[0], entry[1]);
  };

  function pathOf(key) {
    var slash = key.indexOf("/"), kind = slash < 0 ? key : key.slice(0, slash);
    var rest = slash < 0 ? key : key.slice(slash + 1);
    var folder = { index: "", locale: "locales/", hyp: "hyp/", model: "models/", chart: "charts/",
      bootstrap: "", ranks: "", separable: "", stats: "stats/" }[kind];
    return "data/" + folder + rest + ".js";
  }

  // The payload of shard `key` (a Promise; each shard is loaded once per page).
  function load(key) {
    if (loaded[key]) { return loaded[key]; }
    if (typeof DecompressionStream === "undefined") {
      return Promise.reject(new Error("this browser cannot decompress the site's data " +
        "(DecompressionStream is missing); use a current Chrome, Edge, Firefox or Safari"));
    }
    loaded[key] = new Promise(function (resolve, reject) {
      waiting[key] = [resolve, reject];
      var script = document.createElement("script");
      script.src = root + pathOf(key);
      script.onerror = function () {
        delete waiting[key];
        reject(new Error("could not load " + pathOf(key) + (location.protocol === "file:" ?
          " (this browser may block files opened from disk: run `cultivar serve` and open " +
          "http://127.0.0.1:8000/)" : "")));
      };
      script.onload = function () { script.remove(); };
      document.head.appendChild(script);
    });
    return loaded[key];
  }

  // One model's translations of one locale, from its hypothesis shard (hyp/<slug>: every
  // locale in one file, instance-major; shards.py) as {model, locale, flores, cultivar, items:
  // [[id, hyp_o, raw_o, rules_o, hyp_l, raw_l, rules_l]]}; a Promise, rejected for a locale the
  // model has no translations of.
  var views = {};
  function hyp(slug, locale) {
    return load("hyp/" + slug).then(function (shard) {
      if (!views[slug]) {
        var byLocale = shard.locales.map(function (l) {
          return { model: shard.model, locale: l[0], flores: l[1], cultivar: l[2], items: [] };
        });
        shard.items.forEach(function (item) {
          item[1].forEach(function (out) {
            byLocale[out[0]].items.push([item[0]].concat(out.slice(1)));
          });
        });
        views[slug] = {};
        byLocale.forEach(function (view) { views[slug][view.locale] = view; });
      }
      var view = views[slug][locale];
      if (!view) { throw new Error(shard.model + " has no translations of " + locale); }
      return view;
    });
  }

  // Hash parameters (#a=1&b=2) as an object, and back.
  function readHash() {
    var out = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      if (!part) { return; }
      var eq = part.indexOf("=");
      try {
        var name = decodeURIComponent(eq < 0 ? part : part.slice(0, eq));
        out[name] = eq < 0 ? "" : decodeURIComponent(part.slice(eq + 1));
      } catch (e) { /* a malformed escape in a hand-edited hash: that part is ignored */ }
    });
    return out;
  }
  // Write ``params`` into the hash: a new history entry when ``push`` (a reader's choice, so
  // that Back returns to the view before it), else the current entry; nothing when unchanged.
  function writeHash(params, push) {
    var parts = Object.keys(params).filter(function (k) { return params[k]; }).map(function (k) {
      return encodeURIComponent(k) + "=" + encodeURIComponent(params[k]);
    });
    var hash = "#" + parts.join("&");
    if (hash === location.hash || (hash === "#" && !location.hash)) { return; }
    history[push ? "pushState" : "replaceState"](null, "", hash);
  }
  // Call ``restore`` whenever the hash changes under the page (Back / Forward, an edited
  // address, a link to the same page): the view follows the hash, always.
  function onHashChange(restore) {
    var last = location.hash;
    function check() {
      if (location.hash === last) { return; }
      last = location.hash;
      restore();
    }
    window.addEventListener("popstate", check);
    window.addEventListener("hashchange", check);
    return function () { last = location.hash; };  // call after writing the hash yourself
  }

  // A message in `element` (text only).
  function say(element, text, kind) {
    element.textContent = text;
    element.className = "status" + (kind ? " " + kind : "");
  }

  window.Cultivar.load = load;
  window.Cultivar.hyp = hyp;
  window.Cultivar.readHash = readHash;
  window.Cultivar.writeHash = writeHash;
  window.Cultivar.onHashChange = onHashChange;
  window.Cultivar.say = say;
  window.Cultivar.root = root;
}());
