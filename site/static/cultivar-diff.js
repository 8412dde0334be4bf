// Word-level differences between an original and a localised sentence: the browser's copy of
// cultivar_assets/site/diff.py (same tokens, same alignment, same spans; a test runs both on the
// same cases). Tokens: single CJK ideographs / kana, runs of other word characters, runs of other
// non-space characters; Python's \w is [\p{L}\p{N}_] and its \s the explicit class below.
// The alignment is a port of Python's difflib.SequenceMatcher (autojunk off, no junk).
(function () {
  "use strict";
  var CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff";
  var WS = "\t\n\u000b\f\r\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000";
  var TOKEN = new RegExp("[" + CJK + "]|(?:(?![" + CJK + "])[\\p{L}\\p{N}_])+|[^\\p{L}\\p{N}_" +
                         WS + "]+", "gu");

  function bounds(text) {
    var out = [], match;
    TOKEN.lastIndex = 0;
    while ((match = TOKEN.exec(text)) !== null) {
      out.push([match.index, match.index + match[0].length]);
    }
    return out;
  }

  function longestMatch(a, b2j, alo, ahi, blo, bhi, b) {
    var besti = alo, bestj = blo, bestsize = 0, j2len = new Map();
    for (var i = alo; i < ahi; i++) {
      var next = new Map(), js = b2j.get(a[i]) || [];
      for (var n = 0; n < js.length; n++) {
        var j = js[n];
        if (j < blo) { continue; }
        if (j >= bhi) { break; }
        var k = (j2len.get(j - 1) || 0) + 1;
        next.set(j, k);
        if (k > bestsize) { besti = i - k + 1; bestj = j - k + 1; bestsize = k; }
      }
      j2len = next;
    }
    while (besti > alo && bestj > blo && a[besti - 1] === b[bestj - 1]) {
      besti -= 1; bestj -= 1; bestsize += 1;
    }
    while (besti + bestsize < ahi && bestj + bestsize < bhi &&
           a[besti + bestsize] === b[bestj + bestsize]) {
      bestsize += 1;
    }
    return [besti, bestj, bestsize];
  }

  function matchingBlocks(a, b) {
    var b2j = new Map();
    b.forEach(function (token, j) {
      if (!b2j.has(token)) { b2j.set(token, []); }
      b2j.get(token).push(j);
    });
    var queue = [[0, a.length, 0, b.length]], blocks = [];
    while (queue.length) {
      var q = queue.pop(), alo = q[0], ahi = q[1], blo = q[2], bhi = q[3];
      var m = longestMatch(a, b2j, alo, ahi, blo, bhi, b), i = m[0], j = m[1], k = m[2];
      if (k) {
        blocks.push(m);
        if (alo < i && blo < j) { queue.push([alo, i, blo, j]); }
        if (i + k < ahi && j + k < bhi) { queue.push([i + k, ahi, j + k, bhi]); }
      }
    }
    blocks.sort(function (x, y) { return x[0] - y[0] || x[1] - y[1] || x[2] - y[2]; });
    return blocks;
  }

  function spans(text, tokenBounds, changed) {
    var pieces = [], position = 0;
    tokenBounds.forEach(function (bound, index) {
      if (bound[0] > position) {  // whitespace: changed only between two changed tokens
        pieces.push([text.slice(position, bound[0]), index > 0 && changed[index - 1] && changed[index]]);
      }
      pieces.push([text.slice(bound[0], bound[1]), changed[index]]);
      position = bound[1];
    });
    if (position < text.length) { pieces.push([text.slice(position), false]); }
    var out = [], current = "", flag = null;
    pieces.forEach(function (piece) {
      if (piece[1] === flag) { current += piece[0]; return; }
      if (flag !== null) { out.push({ text: current, changed: flag }); }
      current = piece[0]; flag = piece[1];
    });
    if (flag !== null) { out.push({ text: current, changed: flag }); }
    return out;
  }

  // Spans of original and of localised, each {text, changed}.
  function wordDiff(original, localised) {
    original = original || ""; localised = localised || "";
    var ba = bounds(original), bb = bounds(localised);
    var a = ba.map(function (x) { return original.slice(x[0], x[1]); });
    var b = bb.map(function (x) { return localised.slice(x[0], x[1]); });
    var ca = a.map(function () { return true; }), cb = b.map(function () { return true; });
    matchingBlocks(a, b).forEach(function (m) {
      for (var n = 0; n < m[2]; n++) { ca[m[0] + n] = false; cb[m[1] + n] = false; }
    });
    return [spans(original, ba, ca), spans(localised, bb, cb)];
  }

  // Append spans to an element: text nodes, changed ones inside <mark class="changed">.
  function render(element, spanList) {
    spanList.forEach(function (span) {
      if (span.changed) {
        var mark = document.createElement("mark");
        mark.className = "changed";
        mark.textContent = span.text;
        element.appendChild(mark);
      } else {
        element.appendChild(document.createTextNode(span.text));
      }
    });
  }

  window.CultivarDiff = { wordDiff: wordDiff, render: render, tokens: function (text) {
    return bounds(text || "").map(function (x) { return text.slice(x[0], x[1]); });
  } };
}());
