// A session's runs as a thread of turns (turn.js), newest first. Only the cards in view (and a margin) are in the
// DOM: a session with thousands of runs scrolls like one with ten. Rows have one height,
// so a card's place is its index times ROW. The runs are read a page at a time, newest
// first (`?order=newest`): the first page when the session opens, the next (`next_after`)
// when the view comes near the end of what is read; one read at a time.
import { call } from './api.js';
import { el } from './dom.js';
import { turnLines } from './turn.js';

const ROW = 100;        // px; keep in step with .run-item in style.css
const MARGIN = 10;      // rows rendered above and below the visible ones
const PAGE = 100;       // runs a read
const PREFETCH = 40;    // rows left below the view that start the next read
const MAX_SINGLE = 20;  // changed runs below the first page read one by one, at most

export class RunList {
  constructor(node, hooks) {
    this.node = node;
    this.hooks = hooks;  // open(runId), pickBox(run), failed(error)
    this.sessionId = null;
    this.runs = [];
    this.cursor = null;   // next_after of the last page read; null when all is read
    this.reading = null;  // the page read in flight (at most one)
    this.epoch = 0;       // bumped when the session changes: a late page is dropped
    this.openId = null;
    this.window = '';
    this.frame = 0;
    this.spacer = el('li', { class: 'run-spacer', 'aria-hidden': 'true' });
    this.items = new Map();  // index -> {run, item}: the cards drawn
    node.addEventListener('scroll', () => this.schedule());
  }

  schedule() {
    if (!this.frame) this.frame = requestAnimationFrame(() => this.render());
  }

  path(after) {
    const cursor = after ? `&after=${encodeURIComponent(after)}` : '';
    return `/sessions/${encodeURIComponent(this.sessionId)}/runs?order=newest&limit=${PAGE}${cursor}`;
  }

  // A session picked (or none): its first page, from the top.
  async load(sessionId, openId) {
    this.epoch += 1;
    const epoch = this.epoch;
    this.sessionId = sessionId;
    this.openId = openId;
    this.reading = null;
    if (!sessionId) {
      this.runs = [];
      this.cursor = null;
      this.redraw();
      return;
    }
    const doc = await call('GET', this.path(null));
    if (epoch !== this.epoch) return;
    this.node.scrollTop = 0;
    this.runs = doc.runs;
    this.cursor = doc.next_after;
    this.redraw();
  }

  // Runs were created or changed: read the first page again and fold it in. New runs go on
  // top (the cards in view stay where they are); a changed run is replaced where it is. A
  // gap (more new runs than a page) starts the list again from the top.
  async refresh(changed = []) {
    if (!this.sessionId) return;
    const epoch = this.epoch;
    const doc = await call('GET', this.path(null));
    if (epoch !== this.epoch) return;
    const fresh = new Map(doc.runs.map((run) => [run.id, run]));
    // A changed run below the first page is read on its own (a label on an old run).
    const older = changed.filter((id) => !fresh.has(id) && this.has(id)).slice(0, MAX_SINGLE);
    for (const run of await Promise.all(older.map((id) => call('GET', `/runs/${encodeURIComponent(id)}`)))) {
      fresh.set(run.id, run);
    }
    if (epoch !== this.epoch) return;
    const known = new Set(this.runs.map((run) => run.id));
    if (known.size && doc.next_after && !doc.runs.some((run) => known.has(run.id))) {
      this.epoch += 1;  // a page in flight belongs to the list being replaced
      this.reading = null;
      this.runs = doc.runs;
      this.cursor = doc.next_after;
      this.node.scrollTop = 0;
      this.redraw();
      return;
    }
    const added = doc.runs.filter((run) => !known.has(run.id));
    this.runs = added.concat(this.runs.map((run) => fresh.get(run.id) || run));
    if (!known.size) this.cursor = doc.next_after;
    if (added.length && this.node.scrollTop > 0) this.node.scrollTop += added.length * ROW;
    this.redraw();
  }

  // The next page, unless one is being read or all is read.
  more() {
    if (this.reading || !this.cursor || !this.sessionId) return;
    const epoch = this.epoch;
    const after = this.cursor;
    this.reading = call('GET', this.path(after)).then((doc) => {
      if (epoch !== this.epoch) return;
      this.reading = null;
      const known = new Set(this.runs.map((run) => run.id));
      this.runs = this.runs.concat(doc.runs.filter((run) => !known.has(run.id)));
      this.cursor = doc.next_after;
      this.redraw(false);
    }, (error) => {
      if (epoch === this.epoch) this.reading = null;
      this.hooks.failed(error);
    });
  }

  setOpen(openId) {
    this.openId = openId;
    this.redraw();
  }

  find(runId) {
    return this.runs.find((run) => run.id === runId);
  }

  has(runId) {
    return this.runs.some((run) => run.id === runId);
  }

  // Draw again even if the same rows are in view; `rebuild`: every card anew (a pick, the
  // open run or the runs themselves changed), else the cards already drawn are kept (a
  // page was added below them).
  redraw(rebuild = true) {
    if (rebuild) this.items.clear();
    this.window = '';
    this.node.dataset.loaded = String(this.runs.length);
    this.node.dataset.complete = this.cursor ? 'false' : 'true';
    this.render();
  }

  render() {
    this.frame = 0;
    const count = this.runs.length;
    const first = Math.max(0, Math.floor(this.node.scrollTop / ROW) - MARGIN);
    const visible = Math.ceil((this.node.clientHeight || ROW * 10) / ROW);
    const last = Math.min(count, first + visible + 2 * MARGIN);
    if (count - (first + MARGIN + visible) < PREFETCH) this.more();
    const window = `${first}:${last}:${count}`;
    if (window === this.window) return;
    this.window = window;
    this.spacer.style.height = `${count * ROW}px`;
    // The set's size is known once every page is read (-1: not known yet, as ARIA says).
    const setsize = this.cursor ? -1 : count;
    // Cards still in the window stay (a scroll step adds and removes only the rows that
    // came into or left it); the others go.
    const kept = new Map();
    for (const [index, entry] of this.items) {
      if (index >= first && index < last && entry.run === this.runs[index]) kept.set(index, entry);
    }
    const top = kept.size ? Math.min(...kept.keys()) : last;
    if (kept.size && Math.max(...kept.keys()) - top + 1 !== kept.size) kept.clear();  // a hole
    if (!kept.size || this.spacer.parentNode !== this.node) {
      kept.clear();
      this.node.replaceChildren(this.spacer);
    } else {
      for (const [index, entry] of this.items) if (!kept.has(index)) entry.item.remove();
    }
    const above = [];
    const below = [];
    for (let i = first; i < last; i += 1) {
      const entry = kept.get(i);
      if (entry) {
        entry.item.setAttribute('aria-setsize', setsize);
        continue;
      }
      const item = this.card(this.runs[i], i, setsize);
      kept.set(i, { run: this.runs[i], item });
      (i < top ? above : below).push(item);
    }
    this.spacer.after(...above);
    this.node.append(...below);
    this.items = kept;
  }

  card(run, index, setsize) {
    const item = el('li', { class: 'run-item', 'aria-posinset': index + 1, 'aria-setsize': setsize },
    el('button', {
      type: 'button', class: 'run-card', onclick: () => this.hooks.open(run.id),
      'aria-current': run.id === this.openId ? 'true' : null,
      dataset: { runId: run.id, status: run.status },
    },
    turnLines(run, (id) => this.find(id))),
    this.hooks.pickBox(run));
    item.style.top = `${index * ROW}px`;
    return item;
  }
}
