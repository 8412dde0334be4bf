// Tokens, token diffs, highlights and edit counts: for the site's segment browser and the
// post-editing tool. The JavaScript twin of cultivar_assets/textdiff.py (whose docstring defines
// the rules: the same tokenisation, the same diff, diff-match-patch with no time limit and no
// semantic cleanup), of the display rule of cultivar_assets/site/diff.py (spans, wordDiff) and of
// the edit count of cultivar_assets/construction/annotation/text_edits.py. tests/test_annotation_edits.py
// and tests/test_site_js.py run both on the same cases.
// Works as a classic browser script (global CultivarTextDiff, needs the global diff_match_patch:
// pages load module-shim.js and vendor/diff-match-patch/diff_match_patch.js first) and under
// node (require), so the tests can call it directly.
(function (root, factory) {
  "use strict";
  if (typeof require === "function" && typeof module === "object" && module.exports) {
    module.exports = factory(require("./vendor/diff-match-patch/diff_match_patch.js"));
  } else {
    root.CultivarTextDiff = factory(root.diff_match_patch);
  }
})(this, function (DiffMatchPatch) {
  "use strict";

  // Unicode White_Space, the same list as WHITESPACE in textdiff.py.
  var WHITESPACE = new Set(("\u0009\u000a\u000b\u000c\u000d\u0020\u0085\u00a0\u1680" +
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" +
    "\u2028\u2029\u202f\u205f\u3000").split(""));
  var WORD = /^[\p{L}\p{M}\p{N}\u200c\u200d]$/u;
  var UNSEGMENTED_SCRIPTS = new Set(["Hans", "Hant", "Hani", "Jpan", "Hira", "Kana", "Thai",
    "Laoo", "Khmr", "Mymr"]);
  var FIRST_CODE = 0x100, LAST_CODE = 0xD7FF;

  function modeForScript(script) {
    return UNSEGMENTED_SCRIPTS.has(script) ? "char" : "word";
  }

  // Tokens of text: [{text, start, end}] with UTF-16 offsets (for highlighting).
  function tokenize(text, mode) {
    if (mode !== "word" && mode !== "char") {
      throw new Error("unknown token mode " + mode);
    }
    var chars = [], offsets = [], offset = 0;
    for (var ch of text) {   // code points, as in Python
      chars.push(ch);
      offsets.push(offset);
      offset += ch.length;
    }
    offsets.push(offset);
    var tokens = [], i = 0;
    while (i < chars.length) {
      if (WHITESPACE.has(chars[i])) { i += 1; continue; }
      var end = i + 1;
      if (mode === "word" && WORD.test(chars[i])) {
        while (end < chars.length && WORD.test(chars[end])) { end += 1; }
      }
      tokens.push({text: chars.slice(i, end).join(""), start: offsets[i], end: offsets[end]});
      i = end;
    }
    return tokens;
  }

  function encode(a, b) {
    var codes = new Map(), next = FIRST_CODE;
    function code(token) {
      if (!codes.has(token)) {
        if (next > LAST_CODE) { throw new Error("too many distinct tokens to diff"); }
        codes.set(token, String.fromCharCode(next));
        next += 1;
      }
      return codes.get(token);
    }
    var left = a.map(code).join(""), right = b.map(code).join("");
    return [left, right];
  }

  // [[operation, number of tokens]]: -1 delete, 0 equal, 1 insert.
  function diffOps(a, b) {
    var engine = new DiffMatchPatch();
    engine.Diff_Timeout = 0;
    var encoded = encode(a, b);
    return engine.diff_main(encoded[0], encoded[1], false).map(function (d) {
      return [d[0], d[1].length];
    });
  }

  function texts(tokens) { return tokens.map(function (t) { return t.text; }); }

  // Both texts' tokens, each with .changed, plus the edit count and the changed-token count.
  function compare(before, after, mode) {
    var a = tokenize(before, mode), b = tokenize(after, mode);
    var ia = 0, ib = 0, edits = 0, inRun = false;
    diffOps(texts(a), texts(b)).forEach(function (d) {
      var op = d[0], n = d[1];
      if (op !== 0 && !inRun) { edits += 1; }
      inRun = op !== 0;
      for (var k = 0; k < n; k += 1) {
        if (op <= 0) { a[ia].changed = op !== 0; ia += 1; }
        if (op >= 0) { b[ib].changed = op !== 0; ib += 1; }
      }
    });
    var changed = a.concat(b).filter(function (t) { return t.changed; }).length;
    return {before: a, after: b, edits: edits, changedTokens: changed};
  }

  function countEdits(before, after, mode) { return compare(before, after, mode).edits; }

  // Pieces of text [{text, changed}] for highlighting: changed tokens are marked, and so is the
  // whitespace between two changed tokens (one highlighted span for a replaced multi-word name).
  function spans(text, tokens) {
    var pieces = [], position = 0;
    tokens.forEach(function (token, index) {
      if (token.start > position) {
        var inner = index > 0 && tokens[index - 1].changed && token.changed;
        pieces.push({text: text.slice(position, token.start), changed: inner});
      }
      pieces.push({text: text.slice(token.start, token.end), changed: token.changed});
      position = token.end;
    });
    if (position < text.length) { pieces.push({text: text.slice(position), changed: false}); }
    var merged = [];
    pieces.forEach(function (piece) {
      var last = merged[merged.length - 1];
      if (last && last.changed === piece.changed) { last.text += piece.text; }
      else { merged.push({text: piece.text, changed: piece.changed}); }
    });
    return merged;
  }

  // Spans of both texts, each [{text, changed}] (site/diff.py word_diff).
  function wordDiff(before, after, mode) {
    before = before || ""; after = after || "";
    var c = compare(before, after, mode);
    return [spans(before, c.before), spans(after, c.after)];
  }

  // Append spans to an element: text nodes, changed ones inside <mark class="changed">.
  function render(element, spanList) {
    spanList.forEach(function (span) {
      if (span.changed) {
        var mark = element.ownerDocument.createElement("mark");
        mark.className = "changed";
        mark.textContent = span.text;
        element.appendChild(mark);
      } else {
        element.appendChild(element.ownerDocument.createTextNode(span.text));
      }
    });
  }

  return {
    WHITESPACE: WHITESPACE,
    UNSEGMENTED_SCRIPTS: UNSEGMENTED_SCRIPTS,
    modeForScript: modeForScript,
    tokenize: tokenize,
    diffOps: diffOps,
    compare: compare,
    countEdits: countEdits,
    spans: spans,
    wordDiff: wordDiff,
    render: render
  };
});
