/**
 * The timeline of a relocation at a site as an SVG picture: one lane per phase and per control-plane
 * component, a bar for each stretch of time, the critical path drawn over the bars it runs through,
 * a tick each minute and a dashed line at the goal.
 */
import { ROLLOUT_KINDS } from '../../src/kube/rollout-costs.js';
import { LANE, type Bar, type Group, type Timeline } from './model.js';

const LABEL_W = 230;
const PLOT_W = 760;
const LANE_H = 20;
const TOP = 46;
const COLOR: Record<Group, string> = { node: '#4e79a7', agent: '#9c9c9c', wait: '#f28e2b', component: '#b07aa1' };
const PATH = '#d62728';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const n = (x: number) => Number(x.toFixed(1));

/** The lanes in the order the picture draws them: the agent's phases as they come, then the components. */
export function lanesOf(timeline: Timeline): string[] {
  const seen: string[] = [];
  const add = (lane: string) => {
    if (!seen.includes(lane)) seen.push(lane);
  };
  for (const b of timeline.bars.filter((x) => x.group !== 'component')) add(b.lane);
  // the windows right under the step that holds them
  for (const [window, step] of [
    [LANE.healthWindow, 'health'],
    [LANE.inServiceWindow, 'in-service'],
  ] as const)
    if (seen.includes(window)) {
      seen.splice(seen.indexOf(window), 1);
      seen.splice(seen.indexOf(step) + 1, 0, window);
    }
  for (const kind of [...ROLLOUT_KINDS]) if (timeline.bars.some((b) => b.lane === kind)) add(kind);
  return seen;
}

export function timelineSvg(timeline: Timeline, title: string, goalS: number): string {
  const lanes = lanesOf(timeline);
  const span = Math.max(timeline.total, goalS) * 1.02;
  const x = (s: number) => n(LABEL_W + (s / span) * PLOT_W);
  const y = (lane: string) => TOP + lanes.indexOf(lane) * LANE_H;
  const height = TOP + lanes.length * LANE_H + 40;
  const width = LABEL_W + PLOT_W + 20;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="8" y="18" font-size="13" font-weight="bold">${esc(title)}</text>`,
  ];
  for (let m = 0; m * 60 <= span; m++)
    out.push(
      `<line x1="${x(m * 60)}" y1="${TOP - 6}" x2="${x(m * 60)}" y2="${TOP + lanes.length * LANE_H}" stroke="#e4e4e4"/>`,
      `<text x="${x(m * 60)}" y="${TOP - 10}" text-anchor="middle" fill="#666">${m}</text>`,
    );
  out.push(`<text x="${LABEL_W + PLOT_W}" y="${TOP - 24}" text-anchor="end" fill="#666">minutes from power-on</text>`);
  lanes.forEach((lane, i) => {
    if (i % 2) out.push(`<rect x="0" y="${y(lane)}" width="${width}" height="${LANE_H}" fill="#f7f7f7"/>`);
    out.push(`<text x="8" y="${y(lane) + 14}">${esc(lane)}</text>`);
  });
  for (const b of timeline.bars) out.push(bar(b, x, y(b.lane)));
  // the critical path: a red line through the bars it runs along, joined lane to lane
  let prev: { x: number; y: number } | undefined;
  for (const c of timeline.critical) {
    const cy = y(c.lane) + LANE_H / 2;
    if (prev && prev.y !== cy)
      out.push(
        `<line x1="${prev.x}" y1="${prev.y}" x2="${x(c.start)}" y2="${cy}" stroke="${PATH}" stroke-width="1.5"/>`,
      );
    out.push(`<line x1="${x(c.start)}" y1="${cy}" x2="${x(c.end)}" y2="${cy}" stroke="${PATH}" stroke-width="3"/>`);
    prev = { x: x(c.end), y: cy };
  }
  const bottom = TOP + lanes.length * LANE_H;
  out.push(
    `<line x1="${x(goalS)}" y1="${TOP - 6}" x2="${x(goalS)}" y2="${bottom}" stroke="#333" stroke-dasharray="4 3"/>`,
    `<text x="${x(goalS) - 4}" y="${bottom + 14}" text-anchor="end">goal ${goalS / 60} min</text>`,
    `<line x1="${x(timeline.total)}" y1="${TOP - 6}" x2="${x(timeline.total)}" y2="${bottom}" stroke="${PATH}"/>`,
    `<text x="${x(timeline.total) + 4}" y="${bottom + 14}" fill="${PATH}">in service ${n(timeline.total / 60)} min</text>`,
    legend(bottom + 30),
    '</svg>',
    '',
  );
  return out.join('\n');
}

function bar(b: Bar, x: (s: number) => number, top: number): string {
  const w = Math.max(1, n(x(b.end) - x(b.start)));
  const tip = `${b.label ?? b.lane}: ${n(b.start)} s to ${n(b.end)} s (${n(b.end - b.start)} s)`;
  return `<rect x="${x(b.start)}" y="${top + 4}" width="${w}" height="${LANE_H - 8}" fill="${COLOR[b.group]}" stroke="#ffffff" stroke-width="0.5"><title>${esc(tip)}</title></rect>`;
}

function legend(top: number): string {
  const items: [string, string][] = [
    [COLOR.node, 'node (measured in the VM, scaled)'],
    [COLOR.wait, 'wait the agent imposes or bounds'],
    [COLOR.agent, 'cluster step'],
    [COLOR.component, 'rollout (upstream duration)'],
    [PATH, 'critical path'],
  ];
  return items
    .map(
      ([color, text], i) =>
        `<rect x="${8 + i * 200}" y="${top - 9}" width="12" height="10" fill="${color}"/><text x="${24 + i * 200}" y="${top}">${esc(text)}</text>`,
    )
    .join('\n');
}
