// Shared by the Cultivar annotation tools (post-editing, error analysis): status and error
// messages, autosave in localStorage, JSON download and load (one flow, session()), the questions before a reset and
// before loading over unsaved work, the notice of a frozen field, the instructions collapsed
// after the first visit, and the keys (Alt+Down / Alt+Up from anywhere, j / k outside a text
// field: next / previous item; Enter: into the current item; Escape: out of a text field;
// Ctrl+Enter: the item's main toggle). Single-key shortcuts act only when the focus is not in a
// text field, and never type. Nothing is fetched and nothing is sent; every text is set with
// textContent.
(function () {
  "use strict";

  function now() { return new Date().toISOString(); }

  // One status line (role status) and one error line (role alert); each clears the other.
  function messages(statusBox, errorBox) {
    return {
      say: function (message) { errorBox.textContent = ""; statusBox.textContent = message; },
      complain: function (message) { statusBox.textContent = ""; errorBox.textContent = message; }
    };
  }

  // Autosave under one key. Failures are reported through complain, never silent.
  function storage(key, complain) {
    return {
      save: function (value) {
        try {
          window.localStorage.setItem(key, JSON.stringify(value));
          return true;
        } catch (error) {
          complain("Autosave failed (" + error.message + "): use Download JSON to keep your work.");
          return false;
        }
      },
      // The stored text, or null when nothing is stored or the browser refuses storage.
      text: function () {
        try {
          return window.localStorage.getItem(key);
        } catch (error) {
          complain("This browser does not allow saving here (" + error.message + "): your work " +
            "is not autosaved; use Download JSON to keep it.");
          return null;
        }
      },
      unreadable: function (error) {
        complain("The draft stored in this browser could not be read (" + error.message +
          "); starting afresh. Load a downloaded JSON file if you have one.");
      },
      clear: function () {
        try { window.localStorage.removeItem(key); } catch (error) { /* nothing stored */ }
      }
    };
  }

  function downloadJSON(name, value) {
    var blob = new Blob([JSON.stringify(value, null, 1) + "\n"], {type: "application/json"});
    var url = URL.createObjectURL(blob);
    var link = document.createElement("a");
    link.href = url;
    link.download = name;
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 0);
  }

  // "Refused <name>: <reason> Nothing was loaded."
  function refusal(name, reason) { return "Refused " + name + ": " + reason + " Nothing was loaded."; }

  // A loaded file's document, or the reason to refuse it (not JSON, another format or version).
  function parseFile(text, format, schemaVersion, what, versionWhat) {
    var file;
    try { file = JSON.parse(text); } catch (error) {
      return {reason: "it is not valid JSON (" + error.message + "; truncated or damaged?)."};
    }
    if (!file || typeof file !== "object" || file.format !== format) {
      return {reason: "it is not " + what + "."};
    }
    if (file.schema_version !== schemaVersion) {
      return {reason: "it uses " + versionWhat + " schema version " + file.schema_version +
        "; this tool reads version " + schemaVersion + "."};
    }
    return {file: file};
  }

  // Calls onText(name, text) with the chosen file's text, onError(name, error) if unreadable.
  function onFileChosen(input, onText, onError) {
    input.addEventListener("change", function (event) {
      var chosen = event.target.files && event.target.files[0];
      if (!chosen) { return; }
      chosen.text().then(function (text) {
        onText(chosen.name, text);
      }, function (error) {
        onError(chosen.name, error);
      }).then(function () { event.target.value = ""; });
    });
  }

  // An in-page question with Yes / Cancel (box, its question's element, the two buttons).
  // ask(question, onYes, onNo) shows it with that question and moves the focus to Cancel;
  // returnFocus is focused again when it closes.
  function question(box, text, yes, no, returnFocus) {
    var pending = null;
    function close() { box.hidden = true; pending = null; if (returnFocus) { returnFocus.focus(); } }
    yes.addEventListener("click", function () { var p = pending; close(); if (p) { p.yes(); } });
    no.addEventListener("click", function () {
      var p = pending; close(); if (p && p.no) { p.no(); }
    });
    return function ask(message, onYes, onNo) {
      text.textContent = message;
      pending = {yes: onYes, no: onNo};
      box.hidden = false;
      no.focus();
    };
  }

  // The reset button asks first; onReset runs only after "Yes".
  function resetDialog(button, box, yes, no, onReset) {
    var text = box.querySelector("p");
    var fixed = text.textContent;
    var ask = question(box, text, yes, no, button);
    button.addEventListener("click", function () { ask(fixed, onReset); });
  }

  // Loading a file over work that is not in a downloaded file asks first (box #load-confirm).
  // confirmLoad(summary, name, onYes, say): summary is null when nothing would be lost, else
  // the words for what would be replaced ("3 items changed, 5 edits").
  function loadDialog(box, yes, no, returnFocus, say) {
    var ask = question(box, box.querySelector("p"), yes, no, returnFocus);
    return function confirmLoad(summary, name, onYes) {
      if (!summary) { onYes(); return; }
      ask("Load " + name + " in place of the work in this browser? It would replace " + summary +
        ", not all of it in a downloaded file (Download JSON keeps it).", onYes, function () {
        say("Nothing was loaded from " + name + ": your work is unchanged.");
      });
    };
  }

  // The load / refuse / restore / reset flow of both tools, on one state object
  // {task_id, <the task's hash>, annotator, items: {key: entry}, saved_at, unsaved}, kept in
  // place (a reset or a load changes its contents, never replaces it, so the tool may hold it).
  // The page has the elements #status, #error, #annotator, #download, #load, #load-confirm,
  // #load-yes, #load-no, #reset, #reset-confirm, #reset-yes, #reset-no, #instructions and
  // #tool-header. o:
  //   storageKey, visitedKey       autosave key; the instructions' "visited" key;
  //   identity                     {task_id, <hash>}: a saved draft restores only when equal;
  //   fresh()                      a new state (every item at its start);
  //   restoreEntry(saved)          a saved entry checked and copied, or null to keep the fresh one;
  //   format, schemaVersion, what, versionWhat   the file's format (parseFile);
  //   task, sameTask(header)       the task ({task_id, locale}); is a file's task header this one?
  //   otherWork                    "against other drafts" in the refusal of another task's file
  //                                of the same locale ("it was made against other drafts of …");
  //   readItem(it, entries, problems) -> [key, entry] to take, or null (problems say why);
  //   noun, missingNoun            "items" in "Loaded 12 items"; "instances" in "3 instances missing";
  //   unsavedWork()                what a load would replace, in words, or null;
  //   fileName, file()             the download's name and document;
  //   pending(), pendingNoun, finished   the download's "3 items are not confirmed yet";
  //   resetMessage, render()       what a reset says; draw everything again.
  // Returns {state, say, complain, save, start}: start() restores the autosave, draws the page,
  // collapses the instructions after the first visit and marks the page ready.
  function session(o) {
    var $ = function (id) { return document.getElementById(id); };
    var m = messages($("status"), $("error"));
    var say = m.say, complain = m.complain;
    var store = storage(o.storageKey, complain);
    var state = o.fresh();

    function replaceState(next) {
      Object.keys(state).forEach(function (key) { delete state[key]; });
      Object.assign(state, next);
    }

    function save() {
      state.saved_at = now();
      store.save(state);
    }

    function restore() {
      var text = store.text();
      if (!text) { return; }
      try {
        var saved = JSON.parse(text);
        var same = Object.keys(o.identity).every(function (key) {
          return saved[key] === o.identity[key];
        });
        if (!same) { return; }
        Object.keys(state.items).forEach(function (key) {
          var entry = saved.items && saved.items[key];
          var restored = entry ? o.restoreEntry(entry) : null;
          if (restored) { state.items[key] = restored; }
        });
        state.annotator = typeof saved.annotator === "string" ? saved.annotator : "";
        state.saved_at = saved.saved_at || null;
        state.unsaved = saved.unsaved !== false;  // older saves did not say: assume unsaved
        say("Restored the draft saved in this browser" +
          (saved.saved_at ? " at " + saved.saved_at : "") + ".");
      } catch (error) {
        store.unreadable(error);
      }
    }

    $("annotator").addEventListener("input", function (event) {
      state.annotator = event.target.value;
      state.unsaved = true;
      save();
    });

    $("download").addEventListener("click", function () {
      var file = o.file();
      downloadJSON(o.fileName, file);
      state.unsaved = false;
      save();
      var pending = o.pending();
      var notes = [];
      if (pending) { notes.push(pending + " " + o.pendingNoun + (pending === 1 ? " is" : "s are") +
        " not " + o.finished + " yet"); }
      if (!file.task.annotator) { notes.push("no annotator label is entered"); }
      say("Downloaded " + o.fileName + (notes.length ? " (not ready to hand in: " +
        notes.join("; ") + ")." : ": every " + o.pendingNoun + " is " + o.finished +
        ", ready to hand in."));
    });

    function refuse(name, reason) { complain(refusal(name, reason)); }
    var confirmLoad = loadDialog($("load-confirm"), $("load-yes"), $("load-no"), $("load"), say);

    // A file whose task or items do not match is refused (its first five problems named);
    // otherwise, after asking over unsaved work, its entries and annotator replace the state,
    // which is saved and drawn again, and one line says what was loaded.
    function load(name, text) {
      var parsed = parseFile(text, o.format, o.schemaVersion, o.what, o.versionWhat);
      if (parsed.reason) { refuse(name, parsed.reason); return; }
      var file = parsed.file, header = file.task || {};
      if (!o.sameTask(header)) {
        refuse(name, header.locale !== o.task.locale ?
          "it belongs to task " + header.task_id + " (locale " + header.locale + "), not to " +
            "this task " + o.task.task_id + " (locale " + o.task.locale + ")." :
          "it was made " + o.otherWork + " of " + o.task.locale + " (task " + header.task_id +
            "), not this task's (" + o.task.task_id + ").");
        return;
      }
      var entries = {}, problems = [];
      (Array.isArray(file.items) ? file.items : []).forEach(function (it) {
        var taken = o.readItem(it, entries, problems);
        if (taken) { entries[taken[0]] = taken[1]; }
      });
      var keys = Object.keys(state.items);
      var missing = keys.filter(function (key) { return !entries[key]; });
      if (missing.length) { problems.push(missing.length + " " + o.missingNoun + " missing"); }
      if (problems.length) {
        refuse(name, "it does not match this task's " + o.noun + " (" +
          problems.slice(0, 5).join("; ") + (problems.length > 5 ? "; …" : "") + ").");
        return;
      }
      confirmLoad(o.unsavedWork(), name, function () {
        state.items = entries;
        state.annotator = typeof header.annotator === "string" ? header.annotator : "";
        state.unsaved = false;
        save();
        o.render();
        say("Loaded " + keys.length + " " + o.noun + " from " + name +
          (file.saved_at ? " (saved " + file.saved_at + ")" : "") + ".");
      });
    }

    onFileChosen($("load"), load, function (name, error) {
      refuse(name, "it could not be read (" + error.message + ").");
    });

    resetDialog($("reset"), $("reset-confirm"), $("reset-yes"), $("reset-no"), function () {
      store.clear();
      replaceState(o.fresh());
      o.render();
      say(o.resetMessage);
    });

    function start() {
      restore();
      o.render();
      instructions($("instructions"), o.visitedKey);
      trackHeader($("tool-header"));
      document.documentElement.dataset.ready = "true";
    }

    return {state: state, say: say, complain: complain, save: save, start: start};
  }

  // A text field: textarea, select, an input one types into, or anything contenteditable.
  var NOT_TEXT = ["checkbox", "radio", "button", "submit", "reset", "file", "image", "range",
    "color"];
  function isTyping(target) {
    if (!target || !target.tagName) { return false; }
    return target.tagName === "TEXTAREA" || target.tagName === "SELECT" ||
      (target.tagName === "INPUT" && NOT_TEXT.indexOf(target.type) < 0) ||
      target.isContentEditable === true;
  }

  // The keys of both tools. keys.move(step): Alt+Down/Up from anywhere, j/k outside a text
  // field; keys.toggle(): Ctrl/Cmd+Enter; keys.enter(target): Enter outside a text field and
  // not on a button, link or form control (goes into the current item); keys.escape(target):
  // Escape in a text field (leaves it); keys.other(event, typing) may handle further keys.
  // Each returns true when it acted (then the key does nothing else: single-key shortcuts
  // never type). A shortcut key pressed in a text field is typed as usual.
  function keyboard(keys) {
    document.addEventListener("keydown", function (event) {
      if (event.defaultPrevented || event.isComposing) { return; }
      var target = event.target, typing = isTyping(target);
      var plain = !event.altKey && !event.ctrlKey && !event.metaKey;
      var acted = false;
      if (event.altKey && !event.ctrlKey && !event.metaKey &&
          (event.key === "ArrowDown" || event.key === "ArrowUp")) {
        keys.move(event.key === "ArrowDown" ? 1 : -1);
        acted = true;
      } else if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
        keys.toggle();
        acted = true;
      } else if (typing) {
        acted = plain && event.key === "Escape" && !!keys.escape && keys.escape(target) === true;
      } else if (plain && !event.shiftKey && (event.key === "j" || event.key === "k")) {
        keys.move(event.key === "j" ? 1 : -1);
        acted = true;
      } else if (plain && event.key === "Enter" && keys.enter &&
                 !target.closest("button, a, label, input, select, textarea, summary")) {
        acted = keys.enter(target) === true;
      } else if (keys.other) {
        acted = keys.other(event, typing) === true;
      }
      if (acted) { event.preventDefault(); }
    });
  }

  // The index to go to from `index` by `step` among `count` (clamped; -1 = none yet, and the
  // first move from none goes to the first item, whichever its direction).
  function stepIndex(index, step, count) {
    return index < 0 ? 0 : Math.min(Math.max(index + step, 0), count - 1);
  }

  // A frozen field says so: typing, pasting, cutting or dropping into `field` while frozen()
  // shows `text` in `notice` (an aria-live element next to it); nothing is changed.
  var EDITING_KEYS = ["Backspace", "Delete", "Enter"];
  function frozenNotice(field, notice, frozen, text) {
    function tell(event) {
      if (!frozen()) { return; }
      if (event.type === "keydown" && !(EDITING_KEYS.indexOf(event.key) >= 0 ||
          (event.key.length === 1 && !event.ctrlKey && !event.metaKey && !event.altKey))) {
        return;
      }
      notice.textContent = text;
      notice.hidden = false;
    }
    ["keydown", "paste", "cut", "drop"].forEach(function (type) {
      field.addEventListener(type, tell);
    });
  }

  // The instructions (<details>) are open on the first visit of a task in this browser and
  // closed on later visits (remembered in localStorage under "<prefix>:<task id>"). Where the
  // browser refuses storage they stay open (the autosave reports the refusal itself).
  function instructions(details, key) {
    try {
      if (window.localStorage.getItem(key) !== null) { details.open = false; }
      window.localStorage.setItem(key, now());
    } catch (error) { /* storage refused: reported by the autosave; instructions stay open */ }
  }

  // The sticky header's height as the CSS variable --header-height (items scroll below it).
  function trackHeader(header) {
    function set() {
      document.documentElement.style.setProperty("--header-height", header.offsetHeight + "px");
    }
    set();
    window.addEventListener("resize", set);
    if (window.ResizeObserver) { new window.ResizeObserver(set).observe(header); }
  }

  // Can this browser draw the page's text in the locale's language? Each distinct letter of the
  // elements with lang="<notice's data-lang>" is checked in their font (static/script-check.js:
  // the letters drawn as the "missing glyph" box of U+0378). The notice says
  // how many, which, and what to install; data-checked="true" when the check has run.
  var undrawable = window.cultivarUndrawable;  // static/script-check.js

  function checkScript(notice) {
    var lang = notice.getAttribute("data-lang");
    var elements = Array.prototype.filter.call(document.querySelectorAll("[lang]"),
      function (element) { return element.getAttribute("lang") === lang; });
    var seen = {};
    var letters = [];
    elements.forEach(function (element) {
      var text = element.tagName === "TEXTAREA" ? element.value : element.textContent;
      Array.from(text).forEach(function (character) {
        if (!seen[character] && /\p{L}/u.test(character)) {
          seen[character] = true;
          letters.push(character);
        }
      });
    });
    var missing = elements.length ?
      undrawable(letters, window.getComputedStyle(elements[0]).fontFamily) : [];
    notice.setAttribute("data-letters", String(letters.length));
    notice.setAttribute("data-missing", String(missing.length));
    if (missing.length) {
      var codes = missing.slice(0, 8).map(function (letter) {
        return "U+" + letter.codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
      });
      notice.textContent = "This browser cannot draw " + missing.length + " of the " +
        letters.length + " different letters of this page's " +
        notice.getAttribute("data-language") + " text (" + codes.join(", ") +
        (missing.length > codes.length ? ", …" : "") + "): it shows them as empty boxes, so " +
        "they cannot be read or checked here. Install " + notice.getAttribute("data-advice") +
        ", then reload this page.";
      notice.hidden = false;
    }
    notice.setAttribute("data-checked", "true");
  }

  function whenReady(run) {
    if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", run);
    } else {
      run();
    }
  }
  whenReady(function () {
    var notice = document.getElementById("script-notice");
    if (notice) { checkScript(notice); }
  });

  window.CultivarTool = {
    now: now, messages: messages, storage: storage, downloadJSON: downloadJSON,
    refusal: refusal, parseFile: parseFile, onFileChosen: onFileChosen, question: question,
    resetDialog: resetDialog, loadDialog: loadDialog, session: session, isTyping: isTyping,
    keyboard: keyboard,
    stepIndex: stepIndex, frozenNotice: frozenNotice, instructions: instructions,
    trackHeader: trackHeader, checkScript: checkScript
  };
})();
