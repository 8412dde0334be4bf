// Cultivar post-editing tool: live highlights, confirmation, autosave, JSON download and load.
// The task (drafts, originals, hashes) is embedded in the page as JSON; nothing is fetched and
// nothing is sent. Every text is set with textContent, never as HTML.
// Rules shared with Python: the action of a final pair (construction/annotation/task.py, classifyAction
// below), tokens and edit counts (textdiff.js = textdiff.py and text_edits.py), the file's layout
// (annotation.schema.json, version 1). Messages, autosave, download/load, reset and keyboard
// moves come from tool-common.js (window.CultivarTool), shared with the error-annotation tool.
// Keys: j / k (outside a text field) and Alt+Down / Alt+Up move between items without entering
// the boxes; Enter goes into the current item's first box, Escape leaves a box; Ctrl+Enter
// confirms. A confirmed item's boxes are frozen and say so when typed into; once an item's pair
// differs from the LLM draft, the draft is shown under that side's rephrased text.
(function () {
  "use strict";

  var TD = window.CultivarTextDiff;
  var CT = window.CultivarTool;
  var data = JSON.parse(document.getElementById("task-data").textContent);
  var task = data.task;
  var FORMAT = "cultivar-annotation";
  var SCHEMA_VERSION = data.schema_version;
  var STORAGE_KEY = "cultivar-postedit:" + task.task_id + ":" + task.drafts_hash;
  var SIDES = ["source", "english"];
  var MODES = {source: task.source_mode, english: "word"};
  var LANGUAGE = document.querySelector("[data-role=source-diff]") ?
    document.querySelector("[data-role=source-diff]").textContent.replace(/ diff: \d+$/, "") :
    "Source";

  var items = data.items;
  var byId = new Map(items.map(function (item) { return [item.instance_id, item]; }));
  var current = null;  // the current item: none until a move, a click or a focus picks one

  var $ = function (id) { return document.getElementById(id); };
  var now = CT.now;
  var tool = CT.session({
    storageKey: STORAGE_KEY, visitedKey: "cultivar-postedit-visited:" + task.task_id,
    task: task, otherWork: "against other drafts",
    sameTask: function (header) {
      return header.task_id === task.task_id && header.drafts_hash === task.drafts_hash;
    },
    identity: {task_id: task.task_id, drafts_hash: task.drafts_hash},
    fresh: freshState, restoreEntry: restoreEntry,
    format: FORMAT, schemaVersion: SCHEMA_VERSION, what: "a Cultivar annotation file",
    versionWhat: "annotation file", readItem: readItem,
    noun: "items", missingNoun: "instances", unsavedWork: unsavedWork,
    fileName: task.task_id + ".annotations.json", file: annotationFile,
    pending: function () {
      return items.filter(function (item) { return !state.items[item.instance_id].confirmed; })
        .length;
    },
    pendingNoun: "item", finished: "confirmed",
    resetMessage: "The draft was reset: every item is back to its starting text and unconfirmed.",
    render: renderAll
  });
  var state = tool.state, say = tool.say, save = tool.save;

  function freshState() {
    var entries = {};
    items.forEach(function (item) {
      entries[item.instance_id] = {source: item.start.source, english: item.start.english,
        confirmed: false, updated_at: null, confirmed_at: null};
    });
    return {task_id: task.task_id, drafts_hash: task.drafts_hash, annotator: "",
      items: entries, saved_at: null, unsaved: false};
  }

  // kept: final = LLM paraphrase (never for a flagged draft); reverted: final = original;
  // edited: anything else (annotation_task.classify_action).
  function classifyAction(item, entry) {
    var d = item.draft, o = item.original;
    if (!d.flagged && entry.source === d.source && entry.english === d.english) { return "kept"; }
    if (entry.source === o.source && entry.english === o.english) { return "reverted"; }
    return "edited";
  }

  // ---- storage ------------------------------------------------------------------------------
  // A saved entry (autosave) with well-formed texts, copied; null keeps the fresh entry.
  function restoreEntry(entry) {
    if (typeof entry.source !== "string" || typeof entry.english !== "string") { return null; }
    return {source: entry.source, english: entry.english, confirmed: entry.confirmed === true,
      updated_at: entry.updated_at || null, confirmed_at: entry.confirmed_at || null};
  }

  // ---- rendering ----------------------------------------------------------------------------
  function article(id) { return $("item-" + id); }
  function part(el, role) { return el.querySelector("[data-role=" + role + "]"); }

  function fill(el, text, tokens) {
    el.textContent = "";
    TD.spans(text, tokens).forEach(function (piece) {
      if (piece.changed) {
        var mark = document.createElement("mark");
        mark.className = "changed";
        mark.textContent = piece.text;
        el.appendChild(mark);
      } else {
        el.appendChild(document.createTextNode(piece.text));
      }
    });
  }

  function renderItem(item) {
    var el = article(item.instance_id), entry = state.items[item.instance_id];
    SIDES.forEach(function (side) {
      var box = part(el, side + "-box");
      if (box.value !== entry[side]) { box.value = entry[side]; }
      box.readOnly = entry.confirmed;
      box.setAttribute("aria-readonly", entry.confirmed ? "true" : "false");
      var vsOriginal = TD.compare(item.original[side], entry[side], MODES[side]);
      fill(part(el, side + "-original"), item.original[side], vsOriginal.before);
      fill(part(el, side + "-current"), entry[side], vsOriginal.after);
      part(el, side + "-diff").textContent =
        (side === "source" ? LANGUAGE : "English") + " diff: " + vsOriginal.changedTokens;
      var draftBox = part(el, side + "-draft-box");
      if (draftBox) {  // the LLM draft stays in view once this side differs from it
        var away = entry[side] !== item.draft[side];
        if (away && !draftBox.dataset.filled) {
          var vsDraft = TD.compare(item.original[side], item.draft[side], MODES[side]);
          fill(part(el, side + "-draft"), item.draft[side], vsDraft.after);
          draftBox.dataset.filled = "true";
        }
        draftBox.hidden = !away;
      }
      if (!entry.confirmed) { part(el, side + "-frozen").hidden = true; }
      var edits = TD.countEdits(item.start[side], entry[side], MODES[side]);
      part(el, side + "-edits").textContent = (item.draft.flagged ?
        "edits to the original: " : "edits to the LLM paraphrase: ") + edits;
    });
    var action = classifyAction(item, entry);
    el.dataset.action = action;
    el.classList.toggle("confirmed", entry.confirmed);
    part(el, "action").textContent = {kept: "LLM paraphrase kept", edited: "edited",
      reverted: "reverted to FLORES"}[action];
    part(el, "state").textContent = entry.confirmed ? "confirmed" : "pending confirmation";
    part(el, "confirm").checked = entry.confirmed;
    part(el, "revert").disabled = entry.confirmed;
    part(el, "restore").disabled = entry.confirmed;
  }

  // The progress: items confirmed, and pairs changed (either side differs from the text its
  // boxes started with: the paraphrase, or the original for a flagged draft).
  function renderProgress() {
    var reviewed = 0, changed = 0;
    items.forEach(function (item) {
      var entry = state.items[item.instance_id];
      if (entry.confirmed) { reviewed += 1; }
      if (entry.source !== item.start.source || entry.english !== item.start.english) { changed += 1; }
    });
    $("progress").textContent = reviewed + " / " + items.length + " reviewed, " + changed +
      (changed === 1 ? " pair" : " pairs") + " changed";
    if ($("annotator").value !== state.annotator) { $("annotator").value = state.annotator; }
  }

  function applyFilter() {
    var show = $("show").value, shown = 0;
    items.forEach(function (item) {
      var entry = state.items[item.instance_id];
      var visible = show === "all" || (show === "pending" && !entry.confirmed) ||
        (show === "confirmed" && entry.confirmed) || (show === "flagged" && (item.draft.flagged || item.draft.checks.length > 0)) ||
        (show === "revised" && classifyAction(item, entry) !== "kept");
      article(item.instance_id).hidden = !visible;
      if (visible) { shown += 1; }
    });
    $("shown").textContent = shown + " of " + items.length + " items shown";
  }

  function renderAll() {
    items.forEach(renderItem);
    renderProgress();
    applyFilter();
  }

  // ---- editing ------------------------------------------------------------------------------
  function change(id, update) {
    var entry = state.items[id];
    update(entry);
    entry.updated_at = now();
    state.unsaved = true;
    save();
    renderItem(byId.get(id));
    renderProgress();
  }

  function setConfirmed(id, confirmed) {
    change(id, function (entry) {
      entry.confirmed = confirmed;
      entry.confirmed_at = confirmed ? now() : null;
    });
  }

  items.forEach(function (item) {
    var id = item.instance_id, el = article(id);
    SIDES.forEach(function (side) {
      var box = part(el, side + "-box");
      box.addEventListener("input", function (event) {
        if (state.items[id].confirmed) { return; }
        change(id, function (entry) { entry[side] = event.target.value; });
      });
      CT.frozenNotice(box, part(el, side + "-frozen"), function () {
        return state.items[id].confirmed;
      }, "Confirmed, so this box is frozen: untick \u201cConfirm final version\u201d (or " +
        "press Ctrl+Enter) to edit it again.");
    });
    part(el, "confirm").addEventListener("change", function (event) {
      setConfirmed(id, event.target.checked);
    });
    part(el, "revert").addEventListener("click", function () {
      change(id, function (entry) {
        entry.source = item.original.source;
        entry.english = item.original.english;
      });
      say(item.key + ": reverted to the original FLORES entry.");
    });
    part(el, "restore").addEventListener("click", function () {
      change(id, function (entry) {
        entry.source = item.start.source;
        entry.english = item.start.english;
      });
      say(item.key + (item.draft.flagged ? ": edits cleared." : ": LLM paraphrase restored."));
    });
    el.addEventListener("focusin", function () { markCurrent(id); });
  });

  $("show").addEventListener("change", applyFilter);

  // ---- keyboard -----------------------------------------------------------------------------
  function visibleIds() {
    return items.filter(function (item) { return !article(item.instance_id).hidden; })
      .map(function (item) { return item.instance_id; });
  }

  function markCurrent(id) {
    if (current !== null && current !== id) {
      article(current).classList.remove("current");
      article(current).removeAttribute("aria-current");
    }
    current = id;
    article(id).classList.add("current");
    article(id).setAttribute("aria-current", "true");
  }

  // Moving to an item scrolls to it, marks it current and focuses its heading, never an edit
  // box: the next j / k moves on, Enter (or Tab, or a click) goes into the boxes.
  function focusItem(id) {
    markCurrent(id);
    var el = article(id);
    el.scrollIntoView({block: "start"});
    el.querySelector("h2").focus({preventScroll: true});
  }

  function move(step) {
    var ids = visibleIds();
    if (!ids.length) { return; }
    focusItem(ids[CT.stepIndex(ids.indexOf(current), step, ids.length)]);
  }

  $("next-pending").addEventListener("click", function () {
    var ids = items.map(function (item) { return item.instance_id; });
    var start = Math.max(ids.indexOf(current), -1);
    for (var k = 1; k <= ids.length; k += 1) {
      var id = ids[(start + k) % ids.length];
      if (!state.items[id].confirmed) {
        if (article(id).hidden) { $("show").value = "all"; applyFilter(); }
        focusItem(id);
        return;
      }
    }
    say("Every item is confirmed.");
  });

  CT.keyboard({
    move: move,
    toggle: function () {
      if (current === null) { say("No item is current yet: press j to go to the first one."); return; }
      setConfirmed(current, !state.items[current].confirmed);
      say(byId.get(current).key + (state.items[current].confirmed ? ": confirmed." :
        ": confirmation removed."));
    },
    enter: function () {
      if (current === null || article(current).hidden) { return false; }
      part(article(current), "source-box").focus();
      return true;
    },
    escape: function (target) {
      var el = target.closest("article.item");
      if (!el) { return false; }
      el.querySelector("h2").focus();
      return true;
    }
  });

  // ---- download -----------------------------------------------------------------------------
  function annotationFile() {
    return {
      format: FORMAT,
      schema_version: SCHEMA_VERSION,
      task: {task_id: task.task_id, locale: task.locale, drafts_hash: task.drafts_hash,
        n_items: task.n_items, source_mode: task.source_mode, tool_version: task.tool_version,
        annotator: state.annotator.trim()},
      saved_at: now(),
      items: items.map(function (item) {
        var entry = state.items[item.instance_id];
        return {
          instance_id: item.instance_id, locale: task.locale,
          original: {source: item.original.source, english: item.original.english},
          draft: {source: item.draft.source, english: item.draft.english,
            flagged: item.draft.flagged, draft_hash: item.draft.draft_hash,
            prompt_hash: item.draft.prompt_hash},
          final: {source: entry.source, english: entry.english},
          action: classifyAction(item, entry),
          confirmed: entry.confirmed,
          updated_at: entry.updated_at,
          confirmed_at: entry.confirmed ? entry.confirmed_at : null
        };
      })
    };
  }

  // ---- load ---------------------------------------------------------------------------------
  function readItem(it, entries, problems) {
    var item = it && byId.get(it.instance_id);
    if (!item) { problems.push("unknown instance " + (it && it.instance_id)); return null; }
    if (entries[it.instance_id]) { problems.push("instance " + it.instance_id + " twice"); }
    if (!it.draft || it.draft.draft_hash !== item.draft.draft_hash) {
      problems.push("instance " + it.instance_id + " was made against another draft");
    }
    if (!it.final || typeof it.final.source !== "string" ||
        typeof it.final.english !== "string") {
      problems.push("instance " + it.instance_id + " has no final texts");
      return null;
    }
    return [it.instance_id, {source: it.final.source, english: it.final.english,
      confirmed: it.confirmed === true, updated_at: it.updated_at || null,
      confirmed_at: it.confirmed === true ? (it.confirmed_at || null) : null}];
  }

  // What loading a file would replace, in words, or null when nothing would be lost: the work
  // since the last download, load or reset (state.unsaved) that differs from the fresh page.
  function unsavedWork() {
    if (!state.unsaved) { return null; }
    var changed = 0, confirmed = 0, edits = 0;
    items.forEach(function (item) {
      var entry = state.items[item.instance_id];
      var moved = entry.source !== item.start.source || entry.english !== item.start.english;
      if (moved || entry.confirmed) { changed += 1; }
      if (entry.confirmed) { confirmed += 1; }
      SIDES.forEach(function (side) {
        edits += TD.countEdits(item.start[side], entry[side], MODES[side]);
      });
    });
    if (!changed && !state.annotator) { return null; }
    return changed + " of " + items.length + " item" + (items.length === 1 ? "" : "s") +
      " changed (" + edits + " edit" + (edits === 1 ? "" : "s") + " to the starting texts, " +
      confirmed + " confirmed)" + (state.annotator ? " and the annotator label" : "");
  }

  tool.start();
})();
