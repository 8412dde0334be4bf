// Which letters this browser draws as empty boxes: the check that the site's pages
// (static/cultivar.js, checkScripts) and the annotation tools (static/tool-common.js,
// checkScript) share. Each letter is drawn on a canvas in the given font and compared with the
// drawing of U+0378 (unassigned: every font draws its "missing glyph" box for it); the letters
// drawn the same are the ones shown as empty boxes. (document.fonts.check cannot tell: it is
// true whenever no web font is to be loaded, installed fonts or not.)
(function () {
  "use strict";
  var MISSING = "\u0378";
  var SIZE = 48;
  window.cultivarUndrawable = function (letters, font) {
    var canvas = document.createElement("canvas");
    canvas.width = canvas.height = SIZE;
    var context = canvas.getContext("2d", {willReadFrequently: true});
    function picture(text) {
      context.clearRect(0, 0, SIZE, SIZE);
      context.font = (SIZE / 2) + "px " + font;
      context.textBaseline = "middle";
      context.fillStyle = "#000";
      context.fillText(text, 4, SIZE / 2);
      return context.getImageData(0, 0, SIZE, SIZE).data;
    }
    var box = picture(MISSING);
    function same(a) {
      for (var i = 0; i < a.length; i += 1) { if (a[i] !== box[i]) { return false; } }
      return true;
    }
    return letters.filter(function (letter) { return same(picture(letter)); });
  };
}());
