// Lets the vendored diff-match-patch (vendor/diff-match-patch/diff_match_patch.js, unmodified)
// run as a classic browser script: its last lines assign to a CommonJS `module.exports`, which a
// browser lacks. The script itself defines the global `diff_match_patch` (for textdiff.js).
var module = {exports: {}};
