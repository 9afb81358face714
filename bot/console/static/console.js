// The console's progressive part: confirmations for actions, and the overview's charts (in all,
// per channel, the queue, the outbox's lag and the model's tokens), drawn in the page's light or
// dark colours.
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
const COLOURS = { inbound: "#2457c5", answers: "#1d7a3a", errors: "#b3261e", p50: "#2457c5",
                  p95: "#a15c00", waiting: "#6b4fbb", lag: "#a15c00", input: "#2457c5",
                  output: "#1d7a3a", cached: "#6b4fbb" };

function chartWidth(element) {
  return Math.max(260, element.clientWidth - 16);
}

// Axis and grid colours from the page's own (light or dark) colours.
function axes(yLabel, xLabel) {
  const style = getComputedStyle(document.body);
  const ink = style.color;
  const grid = { stroke: style.getPropertyValue("--line").trim() || "#d9dee4", width: 1 };
  return [{ label: xLabel, stroke: ink, grid, ticks: grid }, { label: yLabel, stroke: ink, grid, ticks: grid }];
}

function plot(element, title, series, columns, yLabel, data) {
  const utc = (seconds) => uPlot.tzDate(new Date(seconds * 1e3), "Etc/UTC");
  charts.plots.push(new uPlot({
    title, width: chartWidth(element), height: 200, tzDate: utc,
    series: [{}, ...series], axes: axes(yLabel, "UTC"),
  }, [data.times, ...columns], element));
}

function countLines() {
  return [{ label: "inbound", stroke: COLOURS.inbound }, { label: "answers", stroke: COLOURS.answers },
          { label: "errors", stroke: COLOURS.errors }];
}

function latencyLines() {
  return [{ label: "p50", stroke: COLOURS.p50, spanGaps: true },
          { label: "p95", stroke: COLOURS.p95, spanGaps: true }];
}

function drawChannels(data, every) {
  const holder = document.getElementById("chart-channels");
  if (!holder) return;
  holder.replaceChildren();
  const names = Object.keys(data.channels);
  if (!names.length) {
    const none = document.createElement("p");
    none.className = "hint";
    none.textContent = "no message in this window yet";
    holder.append(none);
  }
  for (const name of names) {
    const lines = data.channels[name];
    const counts = document.createElement("div");
    const latency = document.createElement("div");
    counts.className = latency.className = "chart";
    counts.dataset.channel = latency.dataset.channel = name;
    holder.append(counts, latency);
    plot(counts, `${name}: messages per ${every}`, countLines(),
         [lines.inbound, lines.answers, lines.errors], "messages", data);
    plot(latency, `${name}: answer latency (s)`, latencyLines(), [lines.p50, lines.p95], "s", data);
  }
}

// The model's tokens per clock hour (their own 24 hours, whichever window is shown).
function drawTokens(tokens) {
  const element = document.getElementById("chart-tokens");
  if (!element || !tokens) return;
  plot(element, "Model tokens per hour (last 24 hours)",
       [{ label: "input", stroke: COLOURS.input }, { label: "output", stroke: COLOURS.output },
        { label: "cached", stroke: COLOURS.cached }],
       [tokens.input, tokens.output, tokens.cached], "tokens", tokens);
  const sum = (values) => values.reduce((a, b) => a + b, 0);
  document.body.dataset.chartsTokens = String(sum(tokens.input) + sum(tokens.output));
}

function drawCharts(data) {
  for (const old of charts.plots) old.destroy();
  charts.plots = [];
  const counts = document.getElementById("chart-counts");
  const latency = document.getElementById("chart-latency");
  if (!counts || !latency || typeof uPlot === "undefined") return;
  const every = data.window === "hour" ? "5 minutes" : "hour";
  plot(counts, `Messages per ${every}`, countLines(), [data.inbound, data.answers, data.errors],
       "messages", data);
  plot(latency, "Answer latency (seconds)", latencyLines(), [data.p50, data.p95], "s", data);
  drawChannels(data, every);
  const queue = document.getElementById("chart-queue");
  const outbox = document.getElementById("chart-outbox");
  if (queue) plot(queue, "Messages waiting or running (at each step's end)",
                  [{ label: "waiting", stroke: COLOURS.waiting }], [data.waiting], "messages", data);
  if (outbox) plot(outbox, "Outbox lag: made → sent, p95 (seconds)",
                   [{ label: "lag p95", stroke: COLOURS.lag, spanGaps: true }], [data.outbox_lag], "s", data);
  drawTokens(data.tokens);
  const oldest = document.getElementById("outbox-oldest");
  if (oldest) {
    oldest.textContent = data.outbox_oldest_pending_s === null ? "No reply is waiting in the outbox."
      : `The oldest reply waiting in the outbox was made ${Math.round(data.outbox_oldest_pending_s)} s ago.`;
  }
  document.body.dataset.chartsDrawn = String(data.times.length);
  document.body.dataset.chartsInbound = String(data.inbound.reduce((a, b) => a + b, 0));
  document.body.dataset.chartsChannels = String(Object.keys(data.channels).length);
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
  const current = document.querySelector("header nav a.active");
  if (current) current.scrollIntoView({ block: "nearest", inline: "nearest" });
  loadCharts();
  window.setInterval(loadCharts, 30000);
});
