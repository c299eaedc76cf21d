/* Figures a reader moves (attnlib.book.interactive): no library, no network.
 * Each .attn-fig holds an SVG of its default state, hidden sliders, and a JSON table with one
 * row per state (every combination of slider positions, first slider slowest) of the values
 * that change: keys[i] = [element, attribute or "#text"]. Moving a slider copies its state's row
 * into the SVG and the readouts (announced to screen readers: aria-live, each readout whole:
 * aria-atomic; the value beside a slider is aria-hidden, the slider's aria-valuetext says it);
 * the line that tells a reader without JavaScript which setting is shown (.attn-shown) is
 * hidden; each slider's value is as wide as its longest. Served once from _static, on pages that have such a figure. */
(function () {
  "use strict";
  function setup(root) {
    var data = JSON.parse(root.querySelector("script.attn-data").textContent);
    var controls = Array.prototype.slice.call(root.querySelectorAll(".attn-c"));
    var inputs = controls.map(function (c) { return c.querySelector("input"); });
    var outputs = controls.map(function (c) { return c.querySelector("output"); });
    var values = controls.map(function (c) {
      return Array.prototype.map.call(c.querySelectorAll(".attn-vl"),
                                      function (s) { return s.textContent; });
    });
    var elements = {};
    root.querySelectorAll("[data-e]").forEach(function (el) {
      elements[el.getAttribute("data-e")] = el;
    });
    function update() {
      var index = 0;
      inputs.forEach(function (input, c) {
        var shown = values[c][Number(input.value)];
        index = index * values[c].length + Number(input.value);
        outputs[c].textContent = shown;
        input.setAttribute("aria-valuetext", shown);
      });
      var row = data.states[index];
      data.keys.forEach(function (key, i) {
        var el = elements[key[0]];
        if (key[1] === "#text") { el.textContent = row[i]; } else { el.setAttribute(key[1], row[i]); }
      });
      root.setAttribute("data-state", String(index));
    }
    inputs.forEach(function (input) { input.addEventListener("input", update); });
    root.querySelector(".attn-controls").hidden = false;
    var shownLine = root.querySelector(".attn-shown");  // for readers without JavaScript
    if (shownLine) { shownLine.hidden = true; }
    // A screen reader announces the readouts when a slider changes them, each readout whole
    // (its label with its value: aria-atomic), not only the number that changed.
    var readouts = root.querySelector(".attn-readouts");
    if (readouts) {
      readouts.setAttribute("aria-live", "polite");
      readouts.querySelectorAll(".attn-r").forEach(function (r) {
        r.setAttribute("aria-atomic", "true");
      });
    }
    // The slider says its value (aria-valuetext); the <output> beside it, a status live region
    // of its own, would say it a second time: hidden from screen readers.
    outputs.forEach(function (output) { output.setAttribute("aria-hidden", "true"); });
    // Each value beside a slider gets the width of its longest value, so that the next
    // control does not move sideways while a slider is dragged.
    outputs.forEach(function (output, c) {
      var widest = 0;
      values[c].forEach(function (v) {
        output.textContent = v;
        widest = Math.max(widest, output.getBoundingClientRect().width);
      });
      output.style.minWidth = Math.ceil(widest) + "px";
    });
    update();
  }
  function init() { document.querySelectorAll(".attn-fig").forEach(setup); }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
