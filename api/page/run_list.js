// A session's runs as a thread of turns (turn.js), read as a conversation: the oldest turn on
// top, the newest at the bottom next to the composer, a resume right after the turn it
// answers. Only the cards in view (and a margin) are in the DOM: a session with thousands
// of runs scrolls like one with ten. A turn is as tall as what it shows (its whole input and
// answer, long ones folded): a card's place is the sum of the heights above it, measured
// once drawn (ESTIMATE until then), and a measure that differs moves the cards below it,
// never the turn the reader is looking at. Heights come from a ResizeObserver, all the
// frame's at once after the browser's own layout: reading offsetHeight after inserting a
// turn forced a layout per draw, which made scrolling a long thread drop frames. The runs are read a page at a time, newest first (`?order=newest`): the first
// page when the session opens (the view then sits at its end), the next (`next_after`, the
// older runs) when the view comes near the top of what is read; one read at a time. The
// view follows the end (a new turn comes into sight) only while the reader is at the end;
// a reader who scrolled up keeps the turns they read where they are.
import { call, withPage } from './api.js';
import { el } from './dom.js';
import { turnLines } from './turn.js';

const ESTIMATE = 120;   // px: a turn's height until it is drawn and measured
const MARGIN = 10;      // rows rendered above and below the visible ones
const PAGE = 100;       // runs a read
const PREFETCH = 40;    // rows left above the view that start the next (older) read
const MAX_SINGLE = 20;  // changed runs below the first page read one by one, at most

// Chronological, each resume right after the run it continues (a chain of answers stays
// together); `newest`: the runs as read, newest first.
export function arrange(newest) {
  const byId = new Map(newest.map((run) => [run.id, run]));
  const oldest = [...newest].reverse();
  const children = new Map();
  for (const run of oldest) {
    if (run.parent_run_id && byId.has(run.parent_run_id)) {
      if (!children.has(run.parent_run_id)) children.set(run.parent_run_id, []);
      children.get(run.parent_run_id).push(run);
    }
  }
  const order = [];
  for (const run of oldest) {
    if (run.parent_run_id && byId.has(run.parent_run_id)) continue;
    const stack = [run];
    while (stack.length) {
      const next = stack.pop();
      order.push(next);
      stack.push(...[...(children.get(next.id) || [])].reverse());
    }
  }
  return { order, byId };
}

export class RunList {
  constructor(node, hooks) {
    this.node = node;
    this.hooks = hooks;  // open(runId), pickBox(run), failed(error)
    this.sessionId = null;
    this.runs = [];       // as read: newest first
    this.order = [];      // as shown: arrange(runs).order
    this.byId = new Map();
    this.cursor = null;   // next_after of the last page read; null when all is read
    this.reading = null;  // the page read in flight (at most one)
    this.epoch = 0;       // bumped when the session changes: a late page is dropped
    this.openId = null;
    this.window = '';
    this.frame = 0;
    this.follow = true;   // the reader is at the end: new turns scroll into view
    this.spacer = el('li', { class: 'run-spacer', 'aria-hidden': 'true' });
    this.items = new Map();  // index -> {run, item}: the cards drawn
    this.heights = new Map();  // run id -> the measured height of its turn (px)
    this.tops = [0];           // tops[i]: where turn i starts; tops[n]: the list's height
    this.layoutVersion = 0;
    this.drawnRun = new WeakMap();  // a drawn card (li) -> its run
    this.sizes = new ResizeObserver((entries) => this.measured(entries));
    node.addEventListener('scroll', () => {
      if (node.clientHeight) this.follow = this.atEnd();
      this.schedule();
    });
    // A panel shown again (below 1100 px one shows at a time) or a window resized: a reader
    // who was at the end is there again.
    new ResizeObserver(() => {
      if (this.follow && node.clientHeight) this.toEnd();
      this.schedule();
    }).observe(node);
  }

  atEnd() {
    return this.node.scrollTop + this.node.clientHeight >= this.node.scrollHeight - ESTIMATE / 2;
  }

  // Where each turn starts, from the measured heights (ESTIMATE for the others).
  layout() {
    const tops = new Array(this.order.length + 1);
    tops[0] = 0;
    for (let i = 0; i < this.order.length; i += 1) {
      tops[i + 1] = tops[i] + (this.heights.get(this.order[i].id) ?? ESTIMATE);
    }
    this.tops = tops;
    this.layoutVersion += 1;
    this.spacer.style.height = `${tops[tops.length - 1]}px`;
  }

  // The turn at `y` px from the top (the last one below the end).
  indexAt(y) {
    let low = 0;
    let high = Math.max(0, this.order.length - 1);
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if (this.tops[mid] <= y) low = mid;
      else high = mid - 1;
    }
    return low;
  }

  toEnd() {
    this.node.scrollTop = this.node.scrollHeight;
  }

  schedule() {
    if (!this.frame) this.frame = requestAnimationFrame(() => this.render());
  }

  path(after) {
    const cursor = after ? `&after=${encodeURIComponent(after)}` : '';
    return `/sessions/${encodeURIComponent(this.sessionId)}/runs?order=newest&limit=${PAGE}${cursor}`;
  }

  // A session picked (or none): its newest page, shown from its end.
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
    this.runs = doc.runs;
    this.cursor = doc.next_after;
    this.follow = true;
    this.redraw();
  }

  // Runs were created or changed: read the first page again and fold it in. New runs go at
  // the end (followed into view only by a reader at the end; for the others the cards in
  // view stay where they are); a changed run is replaced where it is. A gap (more new runs
  // than a page) starts the list again from its end.
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
      this.follow = true;
      this.redraw();
      return;
    }
    const added = doc.runs.filter((run) => !known.has(run.id));
    this.runs = added.concat(this.runs.map((run) => fresh.get(run.id) || run));
    if (!known.size) this.cursor = doc.next_after;
    this.redraw();
  }

  // The next (older) page, unless one is being read or all is read. It comes in above the
  // cards in view, which stay where they are.
  more() {
    if (this.reading || !this.cursor || !this.sessionId) return;
    const epoch = this.epoch;
    const after = this.cursor;
    this.reading = call('GET', this.path(after)).then((doc) => {
      if (epoch !== this.epoch) return;
      this.reading = null;
      this.runs = withPage(this.runs, doc.runs);
      this.cursor = doc.next_after;
      this.redraw();
    }, (error) => {
      if (epoch === this.epoch) this.reading = null;
      this.hooks.failed(error);
    });
  }

  // The open run's turn brought into view (a link or a reload opened it), unless it is.
  reveal(runId) {
    const index = this.order.findIndex((run) => run.id === runId);
    if (index < 0 || !this.node.clientHeight) return;
    const top = this.tops[index];
    const height = this.tops[index + 1] - top;
    if (top >= this.node.scrollTop && top + height <= this.node.scrollTop + this.node.clientHeight) return;
    this.node.scrollTop = Math.max(0, top - Math.max(0, this.node.clientHeight - height) / 2);
    this.follow = this.atEnd();
    this.render();
  }

  setOpen(openId) {
    this.openId = openId;
    this.redraw();
  }

  find(runId) {
    return this.byId.get(runId);
  }

  has(runId) {
    return this.byId.has(runId);
  }

  // The runs (or what a card shows) changed: arrange them again and draw. A reader at the
  // end stays at the end; any other keeps the first turn in view at its place on screen
  // (rows added above it, an older page or a resume, move the scroll by their height).
  redraw() {
    const anchor = this.follow ? null : this.anchor();
    ({ order: this.order, byId: this.byId } = arrange(this.runs));
    for (const { item } of this.items.values()) this.sizes.unobserve(item);
    this.items.clear();
    this.window = '';
    this.node.dataset.loaded = String(this.runs.length);
    this.node.dataset.complete = this.cursor ? 'false' : 'true';
    this.layout();
    if (this.spacer.parentNode !== this.node) this.node.replaceChildren(this.spacer);
    this.restore(anchor);
    this.render();
  }

  // The first turn in view and how far the view is scrolled into it.
  anchor() {
    const index = this.indexAt(this.node.scrollTop);
    const run = this.order[index];
    return run ? { id: run.id, offset: this.node.scrollTop - this.tops[index] } : null;
  }

  // Back to the end (a reader there), or to the turn that was in view.
  restore(anchor) {
    if (this.follow) {
      this.toEnd();
    } else if (anchor) {
      const index = this.order.findIndex((run) => run.id === anchor.id);
      if (index >= 0) this.node.scrollTop = this.tops[index] + anchor.offset;
    }
  }

  // The drawn cards' heights (what the ResizeObserver saw this frame): one that differs from
  // what was assumed places the turns again, keeping the turn in view where it is, and draws
  // what came into view. A card no longer drawn (or hidden: height 0) changes nothing.
  measured(entries) {
    const anchor = this.follow ? null : this.anchor();
    let changed = false;
    for (const entry of entries) {
      const run = this.drawnRun.get(entry.target);
      if (!run || !entry.target.isConnected || !entry.borderBoxSize.length) continue;
      const height = Math.ceil(entry.borderBoxSize[0].blockSize);
      if (height && height !== (this.heights.get(run.id) ?? ESTIMATE)) {
        this.heights.set(run.id, height);
        changed = true;
      }
    }
    if (!changed) return;
    this.layout();
    for (const [index, { item }] of this.items) item.style.top = `${this.tops[index]}px`;
    this.restore(anchor);
    this.schedule();
  }

  // A turn folded or unfolded: drawn again in place, and measured.
  redrawTurn(runId) {
    for (const [index, entry] of this.items) {
      if (entry.run.id !== runId) continue;
      const item = this.card(entry.run, index, entry.item.getAttribute('aria-setsize'));
      this.sizes.unobserve(entry.item);
      entry.item.replaceWith(item);
      entry.item = item;
      const toggle = item.querySelector('.show-all');
      if (toggle) toggle.focus();
    }
  }

  render() {
    this.frame = 0;
    const count = this.order.length;
    const top = this.indexAt(this.node.scrollTop);
    const bottom = this.indexAt(this.node.scrollTop + (this.node.clientHeight || ESTIMATE * 10));
    const first = Math.max(0, top - MARGIN);
    const last = Math.min(count, bottom + 1 + MARGIN);
    // Near the top of what is read, the older runs (never while the list is out of sight:
    // a hidden list's scrollTop is 0).
    if (this.node.clientHeight && top < PREFETCH) this.more();
    const window = `${first}:${last}:${count}:${this.layoutVersion}`;
    if (window === this.window) return;  // a width change re-measures by itself
    this.window = window;
    // The set's size is known once every page is read (-1: not known yet, as ARIA says);
    // the places are counted from the oldest read so far.
    const setsize = this.cursor ? -1 : count;
    // Cards still in the window stay (a scroll step adds and removes only the rows that
    // came into or left it); the others go.
    const kept = new Map();
    for (const [index, entry] of this.items) {
      if (index >= first && index < last && entry.run === this.order[index]) kept.set(index, entry);
    }
    const keptTop = kept.size ? Math.min(...kept.keys()) : last;
    if (kept.size && Math.max(...kept.keys()) - keptTop + 1 !== kept.size) kept.clear();  // a hole
    for (const [index, entry] of this.items) if (!kept.has(index)) this.sizes.unobserve(entry.item);
    if (!kept.size || this.spacer.parentNode !== this.node) {
      for (const entry of kept.values()) this.sizes.unobserve(entry.item);
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
        entry.item.style.top = `${this.tops[i]}px`;
        continue;
      }
      const item = this.card(this.order[i], i, setsize);
      kept.set(i, { run: this.order[i], item });
      (i < keptTop ? above : below).push(item);
    }
    this.spacer.after(...above);
    this.node.append(...below);
    this.items = kept;
  }

  // A turn: its time is the button that opens it (a click elsewhere on the card does too,
  // but not on its links, buttons or code, nor when text was selected to copy).
  card(run, index, setsize) {
    const open = () => this.hooks.open(run.id);
    const card = el('article', {
      class: 'run-card', 'aria-current': run.id === this.openId ? 'true' : null,
      dataset: { runId: run.id, status: run.status },
      onclick: (event) => {
        if (event.target.closest('a, button, input, pre, .md-table')) return;
        if (String(window.getSelection() || '')) return;
        open();
      },
    }, turnLines(run, (id) => this.find(id), open, () => this.redrawTurn(run.id)));
    const item = el('li', { class: 'run-item', 'aria-posinset': index + 1, 'aria-setsize': setsize },
      card, this.hooks.pickBox(run));
    item.style.top = `${this.tops[index] ?? index * ESTIMATE}px`;
    this.drawnRun.set(item, run);
    this.sizes.observe(item);
    return item;
  }
}
