// The console's progressive part: confirmations for actions, and the overview's charts.
// Everything works without it but the charts; htmx refreshes the live panels.
"use strict";

document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form instanceof HTMLFormElement ? form.dataset.confirm : undefined;
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});

// A live panel refreshed after the session ended: back to the login, not a stale page.
document.addEventListener("htmx:responseError", (event) => {
  if (event.detail.xhr.status === 401) {
    window.location.assign(`/console/login?next=${encodeURIComponent(window.location.pathname)}`);
  }
});

const charts = { window: "hour", plots: [] };

function chartWidth(element) {
  return Math.max(320, element.clientWidth - 16);
}

function drawCharts(data) {
  for (const plot of charts.plots) plot.destroy();
  charts.plots = [];
  const counts = document.getElementById("chart-counts");
  const latency = document.getElementById("chart-latency");
  if (!counts || !latency || typeof uPlot === "undefined") return;
  const x = data.times;
  const utc = (seconds) => uPlot.tzDate(new Date(seconds * 1e3), "Etc/UTC");
  charts.plots.push(new uPlot({
    title: `Messages per ${data.window === "hour" ? "5 minutes" : "hour"}`,
    width: chartWidth(counts), height: 220, tzDate: utc,
    series: [{}, { label: "inbound", stroke: "#2457c5" }, { label: "answers", stroke: "#1d7a3a" },
             { label: "errors", stroke: "#b3261e" }],
    axes: [{ label: "UTC" }, { label: "messages" }],
  }, [x, data.inbound, data.answers, data.errors], counts));
  charts.plots.push(new uPlot({
    title: "Answer latency (seconds)", width: chartWidth(latency), height: 220, tzDate: utc,
    series: [{}, { label: "p50", stroke: "#2457c5", spanGaps: true },
             { label: "p95", stroke: "#a15c00", spanGaps: true }],
    axes: [{}, { label: "s" }],
  }, [x, data.p50, data.p95], latency));
  document.body.dataset.chartsDrawn = String(x.length);
  document.body.dataset.chartsInbound = String(data.inbound.reduce((a, b) => a + b, 0));
}

async function loadCharts() {
  if (!document.getElementById("chart-counts")) return;
  const response = await fetch(`/console/api/activity?window=${charts.window}`,
                               { credentials: "same-origin" });
  if (response.ok) drawCharts(await response.json());
}

document.addEventListener("click", (event) => {
  const button = event.target instanceof Element ? event.target.closest("[data-window]") : null;
  if (!button) return;
  charts.window = button.dataset.window;
  for (const other of document.querySelectorAll("[data-window]")) {
    other.classList.toggle("active", other === button);
  }
  loadCharts();
});

window.addEventListener("DOMContentLoaded", () => {
  loadCharts();
  window.setInterval(loadCharts, 30000);
});
