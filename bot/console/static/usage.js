// The usage page's charts: tokens and cost per channel over the page's range, from
// /console/api/usage, in the clocks of usage.timezone and the page's light or dark colours.
// Uses axes() and chartWidth() of console.js, which the page loads first.
"use strict";

// A channel's line takes one of the page's own colours (each has a dark-mode value).
const USAGE_INKS = ["--accent", "--ok", "--warn", "--bad", "--muted"];

function usageInk(index) {
  const style = getComputedStyle(document.body);
  return style.getPropertyValue(USAGE_INKS[index % USAGE_INKS.length]).trim() || "#2457c5";
}

function usageHint(element, text) {
  const hint = document.createElement("p");
  hint.className = "hint";
  hint.textContent = text;
  element.replaceChildren(hint);
}

function usageChart(element, title, data, values, yLabel) {
  const names = Object.keys(data.channels);
  const zoned = (seconds) => uPlot.tzDate(new Date(seconds * 1e3), data.timezone);
  const lines = names.map((name, index) => ({ label: name, stroke: usageInk(index), points: { show: true } }));
  element.replaceChildren();
  return new uPlot({
    title, width: chartWidth(element), height: 220, tzDate: zoned,
    series: [{}, ...lines], axes: axes(yLabel, data.timezone),
  }, [data.times, ...names.map((name) => values(data.channels[name]))], element);
}

function drawUsage(data) {
  const tokens = document.getElementById("chart-usage-tokens");
  const cost = document.getElementById("chart-usage-cost");
  const every = data.bucket === "hour" ? "hour" : "day";
  if (!Object.keys(data.channels).length) {
    usageHint(tokens, "No model usage in this range.");
    cost.remove();
  } else {
    const summed = (lines) => lines.input.map((value, index) => value + lines.output[index]);
    usageChart(tokens, `Tokens (input + output) per ${every}`, data, summed, "tokens");
    if (data.priced) {
      usageChart(cost, `Cost per ${every}`, data, (lines) => lines.cost, "cost");
    } else {
      usageHint(cost, "No usage.prices are set, so there is no cost to chart.");
    }
  }
  document.body.dataset.usageDrawn = String(data.times.length);
  document.body.dataset.usageChannels = String(Object.keys(data.channels).length);
}

async function loadUsage() {
  const tokens = document.getElementById("chart-usage-tokens");
  if (!tokens || typeof uPlot === "undefined") return;
  const range = encodeURIComponent(tokens.dataset.range);
  const response = await fetch(`/console/api/usage?range=${range}`, { credentials: "same-origin" });
  if (response.ok) drawUsage(await response.json());
}

window.addEventListener("DOMContentLoaded", loadUsage);
