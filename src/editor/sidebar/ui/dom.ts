import type { Bar } from "../model/feed";

/** The colour of each kind of count, in the bars and beside the numbers. */
export const COLORS: Readonly<Record<string, string>> = { allowed: "#3c9a5f", skipped: "#d0543e", deferred: "#3b7fc4", errors: "#8a3ab9" };
const KINDS = ["allowed", "deferred", "skipped", "errors"] as const;
const SVG = "http://www.w3.org/2000/svg";

function svg(tag: string, attrs: Readonly<Record<string, string | number>>): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/** One stacked bar per bucket: allowed at the bottom, then deferred, skipped, errors; `labels` names each kind. */
export function sparkline(bars: readonly Bar[], labels: Readonly<Record<(typeof KINDS)[number], string>>): SVGElement {
  const width = 180;
  const height = 28;
  const gap = 1;
  let peak = 1;
  for (const b of bars) peak = Math.max(peak, b.allowed + b.skipped + b.deferred + b.errors);
  const barWidth = width / Math.max(1, bars.length);
  const chart = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "sendgate-admission-spark" });
  chart.appendChild(svg("line", { x1: 0, y1: height - 0.5, x2: width, y2: height - 0.5, stroke: "#ccc", "stroke-width": 1 }));
  bars.forEach((b, i) => {
    let y = height;
    for (const kind of KINDS) {
      if (!b[kind]) continue;
      const h = Math.max(1, (b[kind] / peak) * (height - 2));
      y -= h;
      const rect = svg("rect", { x: i * barWidth + gap / 2, y, width: Math.max(1, barWidth - gap), height: h, fill: COLORS[kind] ?? "#999", "data-kind": kind });
      const title = svg("title", {});
      title.textContent = `${labels[kind]} ${b[kind]}`;
      rect.appendChild(title);
      chart.appendChild(rect);
    }
  });
  return chart;
}

/** A count with its colour dot: `data-stat` names the kind, `.sendgate-admission-value` holds the number. */
export function stat(kind: string, label: string, value: number): JQuery {
  return $('<span class="sendgate-admission-stat"></span>').attr("data-stat", kind)
    .append($('<span class="sendgate-admission-dot"></span>').css("background", COLORS[kind] ?? "#999"))
    .append($("<span></span>").text(`${label} `))
    .append($('<b class="sendgate-admission-value"></b>').text(String(value)));
}

/**
 * A section with a heading that folds it (a click, Enter or Space), starting
 * `open` or folded; `setOpen` hears the user's choice, so the caller keeps it
 * across redraws (the sidebar redraws every few seconds).
 */
export function foldable(heading: JQuery, body: JQuery, open: boolean, setOpen: (open: boolean) => void): void {
  const caret = $('<i class="fa sendgate-admission-caret"></i>').prependTo(heading);
  const show = (now: boolean): void => {
    body.toggle(now);
    caret.toggleClass("fa-caret-down", now).toggleClass("fa-caret-right", !now);
    heading.attr("aria-expanded", String(now));
  };
  heading.addClass("sendgate-admission-foldable").attr("role", "button").attr("tabindex", "0");
  heading.on("click keydown", (e) => {
    if (e.type === "keydown" && e.key !== "Enter" && e.key !== " ") return;
    e.preventDefault();
    const now = !body.is(":visible");
    setOpen(now);
    show(now);
  });
  show(open);
}
