// A run's trace as a timeline: each node's start and end paired into a bar on its own row,
// placed by time from the run's start (width = duration; a node still running grows with
// the clock), nested nodes indented under the node that was open when they started, and
// each evaluator result a mark at its time with its passStatus. Bars and marks are buttons:
// focusable, named "node, duration", and focusing or hovering one writes its times as text
// below the timeline. Times are the events' `ts` (Unix epoch seconds; docs/api.md).
// Positions are CSS custom properties set through CSSOM, which the page's CSP allows
// (it forbids style attributes in markup, not element.style from script).
import { button, el, ms } from './dom.js';
import { sourceTarget } from './source.js';

const TICK_MS = 250;
const MAX_DEPTH = 6;

export class Trace {
  // `sources`: the run is a Flow's, whose nodes have source targets (its graph read from
  // source). An Agent's have none, so its rows offer no "Where is" that could only fail.
  constructor({ sources = false } = {}) {
    this.sources = sources;
    this.rows = el('ol', { class: 'timeline-rows' });
    this.scale = el('div', { class: 'timeline-scale' });
    this.detail = el('p', { class: 'timeline-detail hint' }, 'Focus or point at a bar for its times.');
    this.empty = el('p', { class: 'hint' }, 'No trace events.');
    // The scale is the first row, so its ends line up with the tracks'.
    this.rows.append(el('li', { class: 'trace-row scale-row', 'aria-hidden': 'true', hidden: true },
      el('span'), this.scale));
    this.node = el('section', { class: 'timeline', 'aria-label': 'Trace' },
      this.empty, this.rows, this.detail);
    this.items = [];  // {kind: 'node'|'mark', name, start, end (null: open), event, bar, row}
    this.open = [];  // node items without their node.end yet, in start order
    this.run = null;
    this.frame = 0;
    this.tick = 0;
    this.last = null;  // the newest event time (ms), for events that come without one
  }

  // The run's detail: where the timeline starts and, once the run ended, where it ends.
  setRun(run) {
    this.run = run;
    this.schedule();
  }

  add(d) {
    // An event without a time (stored before events carried one) goes where the last one
    // was, or at the run's start.
    const at = typeof d.ts === 'number' ? d.ts * 1000 : (this.last ?? this.runStart() ?? Date.now());
    this.last = Math.max(this.last ?? at, at);
    if (d.type === 'node.start') this.startNode(d, at);
    else if (d.type === 'node.end') this.endNode(d, at);
    else this.addMark(d, at);
    this.empty.hidden = true;
    this.rows.firstChild.hidden = false;
    this.schedule();
  }

  startNode(d, at) {
    const name = d.node === undefined || d.node === null ? '?' : String(d.node);
    const item = { kind: 'node', name, start: at, end: null, event: d };
    const depth = Math.min(this.open.length, MAX_DEPTH);
    item.bar = button('', () => this.show(item), { class: 'bar', dataset: { node: name } });
    this.hover(item);
    const where = d.node && this.sources ? button(`Where is ${name}?`, async () => where.replaceWith(await sourceTarget(name)), { class: 'where' }) : null;
    item.took = el('span', { class: 'took' });
    item.row = el('li', { class: `trace-row depth-${depth}`, dataset: { type: 'node.start', node: name } },
      el('span', { class: 'row-label' }, el('span', { class: 'node-name' }, name), ' ', item.took),
      el('div', { class: 'track' }, item.bar), where);
    this.open.push(item);
    this.items.push(item);
    this.rows.append(item.row);
  }

  endNode(d, at) {
    // The newest open span of that node ends (a node may run again, or inside itself).
    const name = d.node === undefined || d.node === null ? '?' : String(d.node);
    const index = this.open.findLastIndex((item) => item.name === name);
    if (index < 0) return;  // an end without its start: nothing to pair it with
    const [item] = this.open.splice(index, 1);
    item.end = Math.max(at, item.start);
  }

  addMark(d, at) {
    const item = { kind: 'mark', start: at, event: d };
    const name = String(d.evaluator ?? d.type ?? 'trace');
    const pass = d.passStatus === undefined || d.passStatus === null ? '' : String(d.passStatus);
    item.bar = button('', () => this.show(item), {
      class: 'mark', dataset: { pass: passClass(pass) } });
    this.hover(item);
    const facts = d.type === 'evaluation.result'
      ? [d.score === undefined ? '' : String(d.score), pass].filter(Boolean).join(' · ')
      : String(d.type ?? '');
    item.name = name;
    item.facts = facts;
    item.row = el('li', { class: 'trace-row mark-row', dataset: { type: String(d.type ?? 'trace') } },
      el('span', { class: 'row-label' }, name, ' ', el('span', { class: 'pass', dataset: { pass: passClass(pass) } }, facts)),
      el('div', { class: 'track' }, item.bar));
    this.items.push(item);
    this.rows.append(item.row);
  }

  hover(item) {
    item.bar.addEventListener('focus', () => this.show(item));
    item.bar.addEventListener('mouseenter', () => this.show(item));
  }

  // The details of one bar or mark, as text.
  show(item) {
    const origin = this.origin();
    const rel = (t) => `+${ms(t - origin)}`;
    if (item.kind === 'mark') {
      const d = item.event;
      this.detail.textContent = [`${item.name}: ${item.facts || d.type}`, `at ${rel(item.start)}`,
        d.node ? `node ${d.node}` : '', d.reason ? `(${d.reason})` : '',
        typeof d.duration_ms === 'number' ? `took ${ms(d.duration_ms)}` : '']
        .filter(Boolean).join(', ');
      return;
    }
    const end = this.endOf(item);
    this.detail.textContent = `${item.name}: started ${rel(item.start)} (${clock(item.start)}), `
      + (item.end === null ? `still running at ${rel(end)}` : `ended ${rel(end)} (${clock(end)})`)
      + `, ${ms(end - item.start)}`;
  }

  runStart() {
    const run = this.run && Date.parse(this.run.started_at || this.run.created_at || '');
    return Number.isFinite(run) ? run : null;
  }

  origin() {
    const first = this.items.length ? Math.min(...this.items.map((i) => i.start)) : Date.now();
    const run = this.runStart();
    return run === null ? first : Math.min(run, first);
  }

  // Where the timeline ends: the run's end once it ended, else now (open nodes grow).
  finish() {
    const ended = this.run && Date.parse(this.run.ended_at || '');
    if (Number.isFinite(ended)) return Math.max(ended, this.last ?? ended);
    return this.open.length ? Math.max(Date.now(), this.last) : (this.last ?? Date.now());
  }

  endOf(item) {
    return item.end === null ? Math.max(this.finish(), item.start) : item.end;
  }

  schedule() {
    if (!this.frame) this.frame = requestAnimationFrame(() => this.layout());
  }

  layout() {
    this.frame = 0;
    if (!this.items.length) return;
    const origin = this.origin();
    const total = Math.max(this.finish() - origin, 1);
    const pct = (t) => `${Math.min(100, Math.max(0, ((t - origin) / total) * 100)).toFixed(3)}%`;
    for (const item of this.items) {
      item.bar.style.setProperty('--at', pct(item.start));
      if (item.kind === 'mark') {
        item.bar.setAttribute('aria-label', `${item.name}: ${item.facts || item.event.type}, at +${ms(item.start - origin)}`);
        continue;
      }
      const end = this.endOf(item);
      item.bar.style.setProperty('--span', pct(origin + (end - item.start)));
      item.bar.dataset.start = String(Math.round(item.start - origin));
      item.bar.dataset.end = String(Math.round(end - origin));
      item.bar.dataset.state = item.end === null ? 'running' : 'ended';
      const running = item.end === null ? 'running, ' : '';
      item.bar.setAttribute('aria-label', `${item.name}, ${running}${ms(end - item.start)}`);
      item.took.textContent = ms(end - item.start);
    }
    this.scale.replaceChildren(el('span', {}, '0'), el('span', {}, ms(total)));
    // A node still open while the run goes on: keep it growing with the clock.
    const live = this.open.length && !(this.run && this.run.ended_at);
    if (live && !this.tick) {
      this.tick = setInterval(() => this.schedule(), TICK_MS);
    } else if (!live && this.tick) {
      clearInterval(this.tick);
      this.tick = 0;
    }
  }

  close() {
    cancelAnimationFrame(this.frame);
    clearInterval(this.tick);
    this.tick = 0;
  }
}

function passClass(pass) {
  const value = pass.toLowerCase();
  if (value === 'pass' || value === 'passed') return 'pass';
  if (value === 'fail' || value === 'failed') return 'fail';
  return value ? 'other' : 'none';
}

function clock(t) {
  return new Date(t).toISOString().slice(11, 23);
}
