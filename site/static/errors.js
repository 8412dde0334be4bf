// Cultivar error-annotation tool (paper §5): per translation, the set of error types it shows;
// per instance, "done". Autosave, JSON download and load, reset and the keyboard moves come from
// tool-common.js (window.CultivarTool), shared with the post-editing tool. The task is embedded
// in the page as JSON; nothing is fetched and nothing is sent; texts are never set as HTML.
// Keys (outside a text field): j / k next / previous instance, n / N next / previous
// translation (on to the next instance after the last), 1-9 the current translation's error
// types; Alt+Down / Alt+Up and Ctrl+Enter from anywhere. Moves focus a translation's first
// checkbox, never its note. A done instance keeps its ticks in full view (its checkboxes are
// aria-disabled, not disabled, so they are not greyed out) and says how to change it.
// The file's layout: error_annotation.schema.json (version 1), read by cultivar_assets/error_analysis/file.py.
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
  var now = CT.now;
  var tool = CT.session({
    storageKey: STORAGE_KEY, visitedKey: "cultivar-errors-visited:" + task.task_id,
    task: task, otherWork: "for another sample",
    sameTask: function (header) { return header.task_id === task.task_id; },
    identity: {task_id: task.task_id, translations_hash: task.translations_hash},
    fresh: freshState, restoreEntry: restoreEntry,
    format: FORMAT, schemaVersion: SCHEMA_VERSION, what: "a Cultivar error-annotation file",
    versionWhat: "error-annotation file", readItem: readItem,
    noun: "translations", missingNoun: "translations", unsavedWork: unsavedWork,
    fileName: task.task_id + ".errors.json", file: errorFile,
    pending: function () { return groups.filter(function (g) { return !groupDone(g); }).length; },
    pendingNoun: "instance", finished: "done",
    resetMessage: "The draft was reset: no error is marked and no instance is done.",
    render: renderAll
  });
  var state = tool.state, say = tool.say, save = tool.save;
  var current = null;  // the current instance: none until a move, a click or a focus picks one
  var currentKey = null;  // the current translation (item key)

  function freshEntry() {
    return {errors: [], note: "", done: false, updated_at: null, done_at: null};
  }

  function freshState() {
    var entries = {};
    items.forEach(function (item) { entries[item.key] = freshEntry(); });
    return {task_id: task.task_id, translations_hash: task.translations_hash, annotator: "",
      items: entries, saved_at: null, unsaved: false};
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
  // A saved entry (autosave) with well-formed fields, copied (unknown codes dropped); null
  // keeps the fresh entry.
  function restoreEntry(entry) {
    if (!Array.isArray(entry.errors) || typeof entry.note !== "string") { return null; }
    return {
      errors: sortedCodes(entry.errors.filter(function (c) { return CODES.indexOf(c) >= 0; })),
      note: entry.note, done: entry.done === true, updated_at: entry.updated_at || null,
      done_at: entry.done === true ? (entry.done_at || null) : null};
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
        input.setAttribute("aria-disabled", done ? "true" : "false");
        input.closest("label").classList.toggle("ticked", input.checked);
      });
      var note = box.querySelector("[data-role=note]");
      if (note.value !== entry.note) { note.value = entry.note; }
      note.readOnly = done;
      if (!done) { box.querySelector("[data-role=frozen]").hidden = true; }
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
    state.unsaved = true;
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
    state.unsaved = true;
    save();
    renderGroup(group);
    renderProgress();
  }

  var FROZEN = ": this instance is done, so its marks and notes are frozen: untick " +
    "\u201cDone\u201d (or press Ctrl+Enter) to change them.";

  function tellFrozen(item) {
    var notice = fieldset(item).querySelector("[data-role=frozen]");
    notice.textContent = item.group.key + FROZEN;
    notice.hidden = false;
  }

  items.forEach(function (item) {
    var box = fieldset(item);
    box.querySelectorAll("input[data-code]").forEach(function (input) {
      input.addEventListener("click", function (event) {
        if (state.items[item.key].done) { event.preventDefault(); tellFrozen(item); }
      });
      input.addEventListener("change", function () {
        if (!toggleCode(item, input.dataset.code)) { renderGroup(item.group); }
      });
    });
    var note = box.querySelector("[data-role=note]");
    note.addEventListener("input", function (event) {
      if (state.items[item.key].done) { return; }
      change(item, function (entry) { entry.note = event.target.value; });
    });
    CT.frozenNotice(note, box.querySelector("[data-role=frozen]"), function () {
      return state.items[item.key].done;
    }, item.group.key + FROZEN);
    box.addEventListener("focusin", function () { markSystem(item.key); });
  });
  groups.forEach(function (group) {
    var el = article(group.instance_id);
    el.querySelector("[data-role=done]").addEventListener("change", function (event) {
      setDone(group, event.target.checked);
    });
    el.addEventListener("focusin", function () { markGroup(group.instance_id); });
  });

  $("show").addEventListener("change", applyFilter);

  // ---- keyboard -----------------------------------------------------------------------------
  function visibleIds() {
    return groups.filter(function (g) { return !article(g.instance_id).hidden; })
      .map(function (g) { return g.instance_id; });
  }

  function markGroup(id) {
    if (current !== null && current !== id) {
      article(current).classList.remove("current");
      article(current).removeAttribute("aria-current");
    }
    current = id;
    article(id).classList.add("current");
    article(id).setAttribute("aria-current", "true");
  }

  function markSystem(key) {
    if (currentKey !== null && currentKey !== key) {
      fieldset(itemByKey.get(currentKey)).classList.remove("current");
    }
    currentKey = key;
    fieldset(itemByKey.get(key)).classList.add("current");
  }

  // Focus one translation: its first checkbox (a checkbox, not a text field: the keys go on).
  function focusSystem(item, scroll) {
    markGroup(item.group.instance_id);
    markSystem(item.key);
    var box = fieldset(item);
    if (scroll) { article(item.group.instance_id).scrollIntoView({block: "start"}); }
    box.querySelector("input[data-code]").focus({preventScroll: !!scroll});
  }

  function focusGroup(id) {
    focusSystem(groupById.get(id).items[0], true);
  }

  function move(step) {
    var ids = visibleIds();
    if (!ids.length) { return; }
    focusGroup(ids[CT.stepIndex(ids.indexOf(current), step, ids.length)]);
  }

  // n / N: the next / previous translation, on into the next / previous visible instance.
  function moveSystem(step) {
    var ids = visibleIds();
    if (!ids.length) { return; }
    var group = current === null ? null : groupById.get(current);
    var at = group ? group.items.map(function (i) { return i.key; }).indexOf(currentKey) : -1;
    if (!group || article(current).hidden || at < 0) { focusGroup(ids[0]); return; }
    var next = at + step;
    if (next >= 0 && next < group.items.length) {
      var target = group.items[next];
      fieldset(target).scrollIntoView({block: "nearest"});
      focusSystem(target, false);
      return;
    }
    var g = ids.indexOf(current) + step;
    if (g < 0 || g >= ids.length) {
      say(step > 0 ? "This is the last translation shown." : "This is the first translation shown.");
      return;
    }
    var other = groupById.get(ids[g]);
    focusSystem(other.items[step > 0 ? 0 : other.items.length - 1], true);
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

  CT.keyboard({
    move: move,
    toggle: function () {
      if (current === null) { say("No instance is current yet: press j to go to the first one."); return; }
      var group = groupById.get(current);
      setDone(group, !groupDone(group));
      say(group.key + (groupDone(group) ? ": done." : ": not done any more."));
    },
    enter: function () {
      if (current === null || article(current).hidden) { return false; }
      focusGroup(current);
      return true;
    },
    escape: function (target) {
      var box = target.closest("fieldset.system");
      if (!box) { return false; }
      box.querySelector("input[data-code]").focus();
      return true;
    },
    other: function (event, typing) {
      if (typing || event.altKey || event.ctrlKey || event.metaKey) { return false; }
      if (event.key === "n" || event.key === "N") {
        moveSystem(event.key === "n" ? 1 : -1);
        return true;
      }
      var code = SHORTCUT[event.key];
      if (!code) { return false; }
      var box = event.target && event.target.closest && event.target.closest("fieldset.system");
      var item = box ? itemByKey.get(box.dataset.key) : (currentKey && itemByKey.get(currentKey));
      if (!item) { say("No translation is current yet: press j to go to the first one."); return true; }
      if (!toggleCode(item, code)) { tellFrozen(item); }
      return true;
    }
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

  // ---- load ---------------------------------------------------------------------------------
  function readItem(it, entries, problems) {
    var item = it && itemByKey.get(it.key);
    if (!item) { problems.push("unknown translation " + (it && it.key)); return null; }
    if (entries[it.key]) { problems.push(it.key + " twice"); }
    if (it.hypothesis_sha256 !== item.hypothesis_sha256) {
      problems.push(it.key + " was made against another translation");
    }
    if (!Array.isArray(it.errors) || it.errors.some(function (c) {
      return CODES.indexOf(c) < 0;
    })) {
      problems.push(it.key + " has unknown error types");
      return null;
    }
    return [it.key, {errors: sortedCodes(it.errors),
      note: typeof it.note === "string" ? it.note : "", done: it.done === true,
      updated_at: it.updated_at || null,
      done_at: it.done === true ? (it.done_at || null) : null}];
  }

  // What loading a file would replace, in words, or null when nothing would be lost: the work
  // since the last download, load or reset (state.unsaved) that differs from the fresh page.
  function unsavedWork() {
    if (!state.unsaved) { return null; }
    var touched = 0, marks = 0, notes = 0;
    items.forEach(function (item) {
      var entry = state.items[item.key];
      if (entry.errors.length || entry.note || entry.done) { touched += 1; }
      marks += entry.errors.length;
      if (entry.note) { notes += 1; }
    });
    var done = groups.filter(groupDone).length;
    if (!touched && !state.annotator) { return null; }
    return touched + " of " + items.length + " translations marked, noted or done (" + marks +
      " error mark" + (marks === 1 ? "" : "s") + ", " + notes + " note" + (notes === 1 ? "" : "s") +
      ", " + done + " instance" + (done === 1 ? "" : "s") + " done)" +
      (state.annotator ? " and the annotator label" : "");
  }

  tool.start();
})();
