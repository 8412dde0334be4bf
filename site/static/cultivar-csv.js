// Tables as CSV and JSON downloads made in the browser (the segment browser, query results).
// csvSafe is the browser's copy of cultivar_assets.tables.csv_safe (a test holds the two to the
// same cases): text starting with = + - @ tab or CR gets a leading apostrophe, so a spreadsheet
// shows it as text instead of running it as a formula; numbers stay numbers.
(function () {
  "use strict";
  var FORMULA_START = ["=", "+", "-", "@", "\t", "\r"];

  function plain(value) {
    if (value === null || value === undefined) { return null; }
    if (typeof value === "bigint") { return value.toString(); }
    if (value instanceof Date) { return value.toISOString(); }
    if (Array.isArray(value)) { return JSON.stringify(value.map(plain)); }
    if (typeof value === "object") { return JSON.stringify(value, jsonReplacer); }
    return value;
  }
  function jsonReplacer(_key, value) {
    return typeof value === "bigint" ? value.toString() : value;
  }

  function csvSafe(value) {
    value = plain(value);
    if (value === null || typeof value === "number" || typeof value === "boolean") { return value; }
    var text = String(value);
    return FORMULA_START.indexOf(text.charAt(0)) >= 0 ? "'" + text : text;
  }

  function csvCell(value) {
    var safe = csvSafe(value);
    if (safe === null) { return ""; }
    if (typeof safe === "boolean") { return safe ? "True" : "False"; }
    var text = String(safe);
    return /[",\n\r]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
  }

  // CSV text (RFC 4180, like Python's csv module: CRLF line ends, minimal quoting): a header
  // row of `columns`, then one row per object.
  function toCsv(columns, rows) {
    var lines = [columns.map(csvCell).join(",")];
    rows.forEach(function (row) {
      lines.push(columns.map(function (c) { return csvCell(row[c]); }).join(","));
    });
    return lines.join("\r\n") + "\r\n";
  }

  function toJson(columns, rows) {
    return JSON.stringify(rows.map(function (row) {
      var out = {};
      columns.forEach(function (c) {
        var v = row[c];
        out[c] = v === undefined ? null : (typeof v === "bigint" ? v.toString() : v);
      });
      return out;
    }), jsonReplacer, 1);
  }

  function download(filename, text, type) {
    var url = URL.createObjectURL(new Blob([text], { type: type }));
    var link = document.createElement("a");
    link.href = url;
    link.download = filename;
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
  }

  window.CultivarCsv = { csvSafe: csvSafe, toCsv: toCsv, toJson: toJson, download: download };
}());
