/* kip714 charts: draws the charts described by the page's JSON data element (id kip714-chart-data)
 * with the bundled uPlot. Every label is client data: it reaches the page only through uPlot's
 * textContent, never as markup. Hover shows values in the legend, drag on the plot zooms (double-click
 * resets), a click on a legend entry hides or shows that series. */
(function () {
  "use strict";
  var source = document.getElementById("kip714-chart-data");
  if (!source || typeof uPlot === "undefined") { return; }
  var spec = JSON.parse(source.textContent);
  var charts = {};

  function format(value) {
    if (value === null || value === undefined) { return "—"; }
    var abs = Math.abs(value);
    if (abs !== 0 && (abs < 0.001 || abs >= 1e6)) { return value.toExponential(3); }
    return String(Math.round(value * 1000) / 1000);
  }

  function shadeHook(spans) {
    return function (u) {
      if (!spans.length) { return; }
      var ctx = u.ctx;
      ctx.save();
      ctx.fillStyle = "rgba(213,94,0,0.16)";
      for (var i = 0; i < spans.length; i++) {
        var left = u.valToPos(spans[i][0], "x", true);
        var right = u.valToPos(spans[i][1], "x", true);
        var from = Math.max(left, u.bbox.left);
        var to = Math.min(Math.max(right, left + 2), u.bbox.left + u.bbox.width);
        if (to > from) { ctx.fillRect(from, u.bbox.top, to - from, u.bbox.height); }
      }
      ctx.restore();
    };
  }

  function draw(chart, element) {
    var width = Math.max(320, Math.min(element.clientWidth || 640, 1300));
    var series = [{ label: "time (UTC)" }];
    var data = [chart.x];
    chart.lines.forEach(function (line) {
      series.push({
        label: line.label,
        stroke: line.colour,
        width: line.width,
        dash: line.dash.length ? line.dash : undefined,
        spanGaps: false,
        points: { show: chart.x.length < 40 },
        value: function (u, v) { return format(v); },
      });
      data.push(line.values);
    });
    var options = {
      title: chart.title,
      width: width,
      height: 230,
      tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"); },
      scales: { x: { time: true } },
      series: series,
      bands: chart.bands.map(function (b) { return { series: [b.high + 1, b.low + 1], fill: b.fill }; }),
      axes: [{}, { label: chart.unit || "", size: 60 }],
      cursor: { drag: { x: true, y: false } },
      legend: { live: true },
      hooks: { drawClear: [shadeHook(chart.shade)] },
    };
    charts[chart.id] = new uPlot(options, data, element);
  }

  function drawAll() {
    var placed = document.querySelectorAll("[data-chart]");
    var byId = {};
    spec.charts.forEach(function (chart) { byId[chart.id] = chart; });
    for (var i = 0; i < placed.length; i++) {
      var chart = byId[placed[i].getAttribute("data-chart")];
      if (chart && !charts[chart.id]) { draw(chart, placed[i]); }
    }
  }

  /* The page's client filter (the UI) hides the series of clients it filters out. */
  window.kip714Charts = {
    charts: charts,
    showClients: function (visible) {
      spec.charts.forEach(function (chart) {
        var u = charts[chart.id];
        if (!u) { return; }
        chart.lines.forEach(function (line, index) {
          if (line.client) { u.setSeries(index + 1, { show: visible === null || visible.has(line.client) }); }
        });
      });
    },
  };
  drawAll();
})();
