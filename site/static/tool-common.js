// Shared by the Cultivar annotation tools (post-editing, error analysis): status and error
// messages, autosave in localStorage, JSON download and load, the reset confirmation and the
// keyboard moves (Alt+Down / Alt+Up or j / k: next / previous item; Ctrl+Enter: the item's
// main toggle). Nothing is fetched and nothing is sent; every text is set with textContent.
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

  // The reset button asks first; onReset runs only after "Yes".
  function resetDialog(button, box, yes, no, onReset) {
    button.addEventListener("click", function () {
      box.hidden = false;
      no.focus();
    });
    no.addEventListener("click", function () {
      box.hidden = true;
      button.focus();
    });
    yes.addEventListener("click", function () {
      box.hidden = true;
      onReset();
      button.focus();
    });
  }

  function isTyping(target) {
    return !!target && (target.tagName === "TEXTAREA" || target.tagName === "SELECT" ||
      (target.tagName === "INPUT" && ["checkbox", "radio", "button"].indexOf(target.type) < 0));
  }

  // move(step) for Alt+Down/Up and j/k (not while typing); toggle() for Ctrl/Cmd+Enter;
  // other(event, typing) may handle further keys and returns true when it did.
  function keyboard(move, toggle, other) {
    document.addEventListener("keydown", function (event) {
      var typing = isTyping(event.target);
      if (event.altKey && (event.key === "ArrowDown" || event.key === "ArrowUp")) {
        event.preventDefault();
        move(event.key === "ArrowDown" ? 1 : -1);
      } else if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
        event.preventDefault();
        toggle();
      } else if (!typing && !event.altKey && !event.ctrlKey && !event.metaKey &&
                 (event.key === "j" || event.key === "k")) {
        event.preventDefault();
        move(event.key === "j" ? 1 : -1);
      } else if (other && other(event, typing)) {
        event.preventDefault();
      }
    });
  }

  // The index to go to from `index` by `step` among `count` (clamped; -1 = none yet).
  function stepIndex(index, step, count) {
    return index < 0 ? 0 : Math.min(Math.max(index + step, 0), count - 1);
  }

  window.CultivarTool = {
    now: now, messages: messages, storage: storage, downloadJSON: downloadJSON,
    refusal: refusal, parseFile: parseFile, onFileChosen: onFileChosen,
    resetDialog: resetDialog, isTyping: isTyping, keyboard: keyboard, stepIndex: stepIndex
  };
})();
