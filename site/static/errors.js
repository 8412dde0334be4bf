// Cultivar error-annotation tool (paper §5): per translation, the set of error types it shows;
// per instance, "done". Autosave, JSON download and load, reset and the keyboard moves come from
// tool-common.js (window.CultivarTool), shared with the post-editing tool. The task is embedded
// in the page as JSON; nothing is fetched and nothing is sent; texts are never set as HTML.
// The file's layout: error_annotation.schema.json (version 1), read by error_file.py.
(function () {
  "use strict";

  var CT = window.CultivarTool;
  var data = JSON.parse(document.getElementById("task-data").textContent);
  var task = data.task;
  var FORMAT = "cultivar-error-annotation";
  var SCHEMA_VERSION = data.schema_version;
  var CODES = data.types.map(function (t) { return t.code; });
  var SHORTCUT = {};
  data.types.forEach(function (t) { SHORTCUT[t.shortcut] = t.code; });
  var STORAGE_KEY = "cultivar-errors:" + task.task_id + ":" + task.translations_hash;

  var groups = data.groups;
  var items = [];
  var itemByKey = new Map();
  groups.forEach(function (group) {
    group.items.forEach(function (item) {
      item.group = group;
      items.push(item);
      itemByKey.set(item.key, item);
    });
  });
  var groupById = new Map(groups.map(function (g) { return [g.instance_id, g]; }));

  var $ = function (id) { return document.getElementById(id); };
  var messages = CT.messages($("status"), $("error"));
  var say = messages.say, complain = messages.complain;
  var store = CT.storage(STORAGE_KEY, complain);
  var now = CT.now;
  var state = freshState();
  var current = groups.length ? groups[0].instance_id : null;

  function freshEntry() {
    return {errors: [], note: "", done: false, updated_at: null, done_at: null};
  }

  function freshState() {
    var entries = {};
    items.forEach(function (item) { entries[item.key] = freshEntry(); });
    return {task_id: task.task_id, translations_hash: task.translations_hash, annotator: "",
      items: entries, saved_at: null};
  }

  function sortedCodes(codes) {
    return CODES.filter(function (code) { return codes.indexOf(code) >= 0; });
  }

  function groupDone(group) {
    return group.items.every(function (item) { return state.items[item.key].done; });
  }

  function groupErrors(group) {
    return group.items.reduce(function (n, item) {
      return n + state.items[item.key].errors.length;
    }, 0);
  }

  // ---- storage ------------------------------------------------------------------------------
  function save() {
    state.saved_at = now();
    store.save(state);
  }

  function restore() {
    var text = store.text();
    if (!text) { return; }
    try {
      var saved = JSON.parse(text);
      if (saved.task_id !== task.task_id || saved.translations_hash !== task.translations_hash) {
        return;
      }
      items.forEach(function (item) {
        var entry = saved.items && saved.items[item.key];
        if (entry && Array.isArray(entry.errors) && typeof entry.note === "string") {
          state.items[item.key] = {
            errors: sortedCodes(entry.errors.filter(function (c) { return CODES.indexOf(c) >= 0; })),
            note: entry.note, done: entry.done === true, updated_at: entry.updated_at || null,
            done_at: entry.done === true ? (entry.done_at || null) : null};
        }
      });
      state.annotator = typeof saved.annotator === "string" ? saved.annotator : "";
      state.saved_at = saved.saved_at || null;
      say("Restored the draft saved in this browser" +
        (saved.saved_at ? " at " + saved.saved_at : "") + ".");
    } catch (error) {
      store.unreadable(error);
    }
  }

  // ---- rendering ----------------------------------------------------------------------------
  function article(id) { return $("group-" + id); }
  function fieldset(item) {
    return article(item.group.instance_id).querySelector(
      "fieldset.system[data-key=\"" + CSS.escape(item.key) + "\"]");
  }

  function renderGroup(group) {
    var el = article(group.instance_id), done = groupDone(group);
    group.items.forEach(function (item) {
      var entry = state.items[item.key], box = fieldset(item);
      box.querySelectorAll("input[data-code]").forEach(function (input) {
        input.checked = entry.errors.indexOf(input.dataset.code) >= 0;
        input.disabled = done;
      });
      var note = box.querySelector("[data-role=note]");
      if (note.value !== entry.note) { note.value = entry.note; }
      note.readOnly = done;
      box.classList.toggle("has-errors", entry.errors.length > 0);
    });
    var n = groupErrors(group);
    el.classList.toggle("done", done);
    el.querySelector("[data-role=state]").textContent = done ? "done" : "not done";
    el.querySelector("[data-role=count]").textContent =
      n + (n === 1 ? " error marked" : " errors marked");
    el.querySelector("[data-role=done]").checked = done;
  }

  function renderProgress() {
    var done = groups.filter(groupDone).length;
    var marked = items.reduce(function (n, item) {
      return n + state.items[item.key].errors.length;
    }, 0);
    $("progress").textContent = done + " / " + groups.length + " instances done, " + marked +
      (marked === 1 ? " error marked" : " errors marked");
    if ($("annotator").value !== state.annotator) { $("annotator").value = state.annotator; }
  }

  function applyFilter() {
    var show = $("show").value, shown = 0;
    groups.forEach(function (group) {
      var done = groupDone(group);
      var visible = show === "all" || (show === "pending" && !done) ||
        (show === "done" && done) || (show === "errors" && groupErrors(group) > 0);
      article(group.instance_id).hidden = !visible;
      if (visible) { shown += 1; }
    });
    $("shown").textContent = shown + " of " + groups.length + " instances shown";
  }

  function renderAll() {
    groups.forEach(renderGroup);
    renderProgress();
    applyFilter();
  }

  // ---- editing ------------------------------------------------------------------------------
  function change(item, update) {
    var entry = state.items[item.key];
    update(entry);
    entry.updated_at = now();
    save();
    renderGroup(item.group);
    renderProgress();
  }

  function toggleCode(item, code) {
    if (state.items[item.key].done) { return false; }
    change(item, function (entry) {
      var codes = entry.errors.filter(function (c) { return c !== code; });
      if (codes.length === entry.errors.length) { codes.push(code); }
      entry.errors = sortedCodes(codes);
    });
    return true;
  }

  function setDone(group, done) {
    var stamp = now();
    group.items.forEach(function (item) {
      var entry = state.items[item.key];
      entry.done = done;
      entry.done_at = done ? stamp : null;
      entry.updated_at = stamp;
    });
    save();
    renderGroup(group);
    renderProgress();
  }

  items.forEach(function (item) {
    var box = fieldset(item);
    box.querySelectorAll("input[data-code]").forEach(function (input) {
      input.addEventListener("change", function () {
        if (!toggleCode(item, input.dataset.code)) { renderGroup(item.group); }
      });
    });
    box.querySelector("[data-role=note]").addEventListener("input", function (event) {
      if (state.items[item.key].done) { return; }
      change(item, function (entry) { entry.note = event.target.value; });
    });
  });
  groups.forEach(function (group) {
    var el = article(group.instance_id);
    el.querySelector("[data-role=done]").addEventListener("change", function (event) {
      setDone(group, event.target.checked);
    });
    el.addEventListener("focusin", function () { current = group.instance_id; });
  });

  $("annotator").addEventListener("input", function (event) {
    state.annotator = event.target.value;
    save();
  });
  $("show").addEventListener("change", applyFilter);

  // ---- keyboard -----------------------------------------------------------------------------
  function visibleIds() {
    return groups.filter(function (g) { return !article(g.instance_id).hidden; })
      .map(function (g) { return g.instance_id; });
  }

  function focusGroup(id) {
    current = id;
    var el = article(id);
    el.scrollIntoView({block: "start"});
    var target = el.querySelector("fieldset.system input[data-code]:not([disabled])") ||
      el.querySelector("[data-role=done]");
    target.focus();
  }

  function move(step) {
    var ids = visibleIds();
    if (!ids.length) { return; }
    focusGroup(ids[CT.stepIndex(ids.indexOf(current), step, ids.length)]);
  }

  $("next-pending").addEventListener("click", function () {
    var ids = groups.map(function (g) { return g.instance_id; });
    var start = Math.max(ids.indexOf(current), -1);
    for (var k = 1; k <= ids.length; k += 1) {
      var id = ids[(start + k) % ids.length];
      if (!groupDone(groupById.get(id))) {
        if (article(id).hidden) { $("show").value = "all"; applyFilter(); }
        focusGroup(id);
        return;
      }
    }
    say("Every instance is done.");
  });

  CT.keyboard(move, function () {
    if (current === null) { return; }
    var group = groupById.get(current);
    setDone(group, !groupDone(group));
    say(group.key + (groupDone(group) ? ": done." : ": not done any more."));
  }, function (event, typing) {
    var code = SHORTCUT[event.key];
    if (typing || !code || event.altKey || event.ctrlKey || event.metaKey) { return false; }
    var box = event.target && event.target.closest && event.target.closest("fieldset.system");
    var item = box && itemByKey.get(box.dataset.key);
    if (!item) { return false; }
    if (!toggleCode(item, code)) {
      say(item.group.key + " is done: untick Done to change it.");
    }
    return true;
  });

  // ---- download -----------------------------------------------------------------------------
  function errorFile() {
    return {
      format: FORMAT,
      schema_version: SCHEMA_VERSION,
      task: {task_id: task.task_id, locale: task.locale, n_items: task.n_items,
        n_instances: task.n_instances, translations_hash: task.translations_hash,
        error_types: CODES.slice(), tool_version: task.tool_version,
        annotator: state.annotator.trim()},
      saved_at: now(),
      items: items.map(function (item) {
        var entry = state.items[item.key];
        return {
          key: item.key, model_id: item.model_id, locale: task.locale,
          instance_id: item.group.instance_id, hypothesis_sha256: item.hypothesis_sha256,
          errors: entry.errors.slice(), note: entry.note, done: entry.done,
          updated_at: entry.updated_at, done_at: entry.done ? entry.done_at : null
        };
      })
    };
  }

  $("download").addEventListener("click", function () {
    var file = errorFile();
    var name = task.task_id + ".errors.json";
    CT.downloadJSON(name, file);
    var pending = groups.filter(function (g) { return !groupDone(g); }).length;
    var notes = [];
    if (pending) { notes.push(pending + " instance" + (pending === 1 ? " is" : "s are") +
      " not done yet"); }
    if (!file.task.annotator) { notes.push("no annotator label is entered"); }
    say("Downloaded " + name + (notes.length ? " (not ready to hand in: " +
      notes.join("; ") + ")." : ": every instance is done, ready to hand in."));
  });

  // ---- load ---------------------------------------------------------------------------------
  function refuse(name, reason) { complain(CT.refusal(name, reason)); }

  function load(name, text) {
    var parsed = CT.parseFile(text, FORMAT, SCHEMA_VERSION, "a Cultivar error-annotation file",
      "error-annotation file");
    if (parsed.reason) { refuse(name, parsed.reason); return; }
    var file = parsed.file, header = file.task || {};
    if (header.task_id !== task.task_id) {
      refuse(name, header.locale !== task.locale ?
        "it belongs to task " + header.task_id + " (locale " + header.locale + "), not to " +
          "this task " + task.task_id + " (locale " + task.locale + ")." :
        "it was made for another sample of " + task.locale + " (task " + header.task_id +
          "), not this task's (" + task.task_id + ").");
      return;
    }
    var entries = {}, problems = [];
    (Array.isArray(file.items) ? file.items : []).forEach(function (it) {
      var item = it && itemByKey.get(it.key);
      if (!item) { problems.push("unknown translation " + (it && it.key)); return; }
      if (entries[it.key]) { problems.push(it.key + " twice"); }
      if (it.hypothesis_sha256 !== item.hypothesis_sha256) {
        problems.push(it.key + " was made against another translation");
      }
      if (!Array.isArray(it.errors) || it.errors.some(function (c) {
        return CODES.indexOf(c) < 0;
      })) {
        problems.push(it.key + " has unknown error types");
        return;
      }
      entries[it.key] = {errors: sortedCodes(it.errors),
        note: typeof it.note === "string" ? it.note : "", done: it.done === true,
        updated_at: it.updated_at || null,
        done_at: it.done === true ? (it.done_at || null) : null};
    });
    var missing = items.filter(function (item) { return !entries[item.key]; });
    if (missing.length) { problems.push(missing.length + " translations missing"); }
    if (problems.length) {
      refuse(name, "it does not match this task's translations (" +
        problems.slice(0, 5).join("; ") + (problems.length > 5 ? "; …" : "") + ").");
      return;
    }
    state.items = entries;
    state.annotator = typeof header.annotator === "string" ? header.annotator : "";
    save();
    renderAll();
    say("Loaded " + items.length + " translations from " + name +
      (file.saved_at ? " (saved " + file.saved_at + ")" : "") + ".");
  }

  CT.onFileChosen($("load"), load, function (name, error) {
    refuse(name, "it could not be read (" + error.message + ").");
  });

  // ---- reset --------------------------------------------------------------------------------
  CT.resetDialog($("reset"), $("reset-confirm"), $("reset-yes"), $("reset-no"), function () {
    store.clear();
    state = freshState();
    renderAll();
    say("The draft was reset: no error is marked and no instance is done.");
  });

  restore();
  renderAll();
  document.documentElement.dataset.ready = "true";
})();
