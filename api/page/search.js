// The search box at the top of the sessions column: words and filters over all history
// (`GET /search`), the hits newest first in a list that keeps only the rows in view in the
// DOM (one row height each, as the thread) and reads a further page as the view comes near
// its end. The matched words are `<mark>` elements built from the excerpt's offsets (code
// points), never HTML. A hit opens its session and run.
import { RUN_STATUSES, call, withPage } from './api.js';
import { el, ms } from './dom.js';

const ROW = 92;        // px; keep in step with .hit-item in style.css
const MARGIN = 8;      // rows rendered above and below the visible ones
const PAGE = 50;       // hits a read
const PREFETCH = 20;   // rows left below the view that start the next read
const DEBOUNCE = 250;  // ms after the last key before typing searches
const LEAD = 24;       // code points kept before the first match
const FIELDS = { input: 'you: ', output: 'agent: ', label: 'label: ', note: 'note: ',
                 title: 'session: ' };

// The excerpt's text with its matches marked: text nodes and `<mark>`s. `matches` are
// [start, end) in code points, so the text is indexed as an array of them.
export function marked(excerpt) {
  const points = Array.from(excerpt.text || '');
  const out = [];
  let at = 0;
  const spans = [...(excerpt.matches || [])].sort((a, b) => a[0] - b[0]);
  // A narrow column shows a line or two: the words before the first match are cut to a
  // few (at a space), so the match is in sight.
  if (spans.length && spans[0][0] > LEAD) {
    const space = points.lastIndexOf(' ', spans[0][0] - LEAD);
    at = space >= 0 && space < spans[0][0] ? space + 1 : spans[0][0] - LEAD;
    out.push('…');
  }
  for (const [start, end] of spans) {
    const from = Math.max(start, at);
    const to = Math.min(end, points.length);
    if (to <= from) continue;
    if (from > at) out.push(points.slice(at, from).join(''));
    out.push(el('mark', {}, points.slice(from, to).join('')));
    at = to;
  }
  if (at < points.length) out.push(points.slice(at).join(''));
  return out;
}

export class Search {
  // nodes: form, box, filters (the <details>), statuses (its fieldset), labelled, failed,
  // state (the hint line), results (the <ol>), column (the sessions column, marked while
  // searching); hooks: open(runId), failed(error).
  constructor(nodes, hooks) {
    Object.assign(this, nodes);
    this.hooks = hooks;
    this.hits = [];
    this.cursor = null;
    this.reading = null;
    this.epoch = 0;
    this.timer = 0;
    this.frame = 0;
    this.window = '';
    this.openId = null;
    this.items = new Map();
    this.spacer = el('li', { class: 'run-spacer', 'aria-hidden': 'true' });
    this.checks = [...RUN_STATUSES].map((status) => el('label', { class: 'check' },
      el('input', { type: 'checkbox', value: status, name: 'status' }), ` ${status}`));
    this.statuses.append(...this.checks);
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.now();
    });
    this.box.addEventListener('input', () => this.later());
    this.box.addEventListener('keydown', (event) => {
      if (event.key !== 'Escape') return;
      event.preventDefault();  // the page's Escape (closing panels) is not this one
      this.clear();
    });
    this.filters.addEventListener('change', () => this.now());
    this.results.addEventListener('scroll', () => this.schedule());
    new ResizeObserver(() => this.schedule()).observe(this.results);
    this.show();
  }

  // The words and filters as the query string; '' when there is nothing to search for.
  query() {
    const params = new URLSearchParams();
    const q = this.box.value.trim();
    if (q) params.set('q', q);
    for (const check of this.filters.querySelectorAll('input[name="status"]:checked')) {
      params.append('status', check.value);
    }
    if (this.labelled.checked) params.set('labelled', 'true');
    if (this.failed.checked) params.set('evaluator_failed', 'true');
    return params.toString();
  }

  later() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.now(), DEBOUNCE);
  }

  now() {
    clearTimeout(this.timer);
    this.run().catch((error) => this.hooks.failed(error));
  }

  // Words and filters gone: the sessions come back.
  clear() {
    this.box.value = '';
    for (const check of this.filters.querySelectorAll('input[type="checkbox"]')) check.checked = false;
    this.now();
  }

  filterCount() {
    return this.filters.querySelectorAll('input[type="checkbox"]:checked').length;
  }

  async run() {
    this.epoch += 1;
    const epoch = this.epoch;
    const query = this.query();
    this.filters.querySelector('summary').textContent = this.filterCount()
      ? `Filters (${this.filterCount()})` : 'Filters';
    this.current = query;
    this.hits = [];
    this.cursor = null;
    this.reading = null;
    if (!query) {
      this.show();
      return;
    }
    this.show('searching…');
    const doc = await call('GET', `/search?${query}&limit=${PAGE}`);
    if (epoch !== this.epoch) return;
    this.hits = doc.hits;
    this.cursor = doc.next_after;
    this.results.scrollTop = 0;
    this.show();
  }

  // History changed (a run started, ended, was labelled): a reader at the top of a first
  // page has the hits read again; one who scrolled on, or is on a hit, keeps what they read.
  refresh() {
    if (!this.current || this.reading || this.results.scrollTop > 0 || this.hits.length > PAGE
        || this.results.contains(document.activeElement)) return;
    const epoch = this.epoch;
    const shown = this.hits;
    call('GET', `/search?${this.current}&limit=${PAGE}`).then((doc) => {
      // A further page that came in meanwhile is kept: the first page read again is dropped.
      if (epoch !== this.epoch || this.hits !== shown || this.reading
          || JSON.stringify(doc.hits) === JSON.stringify(this.hits)) return;
      this.hits = doc.hits;
      this.cursor = doc.next_after;
      this.show();
    }, () => {});  // the next change or key reads again
  }

  // A further page of hits, unless one is being read or all are read.
  more() {
    if (this.reading || !this.cursor || !this.current) return;
    const epoch = this.epoch;
    this.reading = call('GET', `/search?${this.current}&limit=${PAGE}&after=${encodeURIComponent(this.cursor)}`)
      .then((doc) => {
        if (epoch !== this.epoch) return;
        this.reading = null;
        this.hits = withPage(this.hits, doc.hits);
        this.cursor = doc.next_after;
        this.show();
      }, (error) => {
        if (epoch === this.epoch) this.reading = null;
        this.hooks.failed(error);
      });
  }

  // The state line, the column's mode and the list, from what is read.
  show(pending) {
    const searching = Boolean(this.current);
    this.column.dataset.searching = String(searching);
    this.results.hidden = !searching || !this.hits.length;
    this.results.dataset.loaded = String(this.hits.length);
    this.results.dataset.complete = this.cursor ? 'false' : 'true';
    if (pending) {
      this.state.textContent = pending;
    } else if (!searching) {
      this.state.textContent = 'Type words to find a run in every session (its input, answer, label, note or session title), or pick a filter.';
    } else if (!this.hits.length) {
      this.state.textContent = 'No runs match. Try fewer or other words, or clear the filters (Escape clears all).';
    } else {
      const count = `${this.hits.length}${this.cursor ? '+' : ''}`;
      this.state.textContent = `${count} run${this.hits.length === 1 && !this.cursor ? '' : 's'} match, newest first.`;
    }
    this.items.clear();
    this.window = '';
    this.spacer.style.height = `${this.hits.length * ROW}px`;
    this.results.replaceChildren(this.spacer);
    this.render();
  }

  setOpen(runId) {
    this.openId = runId;
    for (const { hit, item } of this.items.values()) {
      item.firstChild.setAttribute('aria-current', String(hit.id === runId));
    }
  }

  schedule() {
    if (!this.frame) this.frame = requestAnimationFrame(() => this.render());
  }

  render() {
    this.frame = 0;
    const count = this.hits.length;
    const height = this.results.clientHeight;
    const top = Math.floor(this.results.scrollTop / ROW);
    const first = Math.max(0, top - MARGIN);
    const last = Math.min(count, top + Math.ceil((height || ROW * 8) / ROW) + MARGIN);
    if (height && count - last < PREFETCH) this.more();
    const window = `${first}:${last}:${count}`;
    if (window === this.window) return;
    this.window = window;
    const setsize = this.cursor ? -1 : count;
    const kept = new Map();
    for (const [index, entry] of this.items) {
      if (index >= first && index < last) kept.set(index, entry);
      else entry.item.remove();
    }
    // Rows in document order (as Tab and a screen reader go): new rows above the kept
    // ones go right after the spacer, those below at the end.
    const lowest = kept.size ? Math.min(...kept.keys()) : last;
    const above = [];
    const below = [];
    for (let i = first; i < last; i += 1) {
      if (kept.has(i)) continue;
      const item = this.card(this.hits[i], i, setsize);
      kept.set(i, { hit: this.hits[i], item });
      (i < lowest ? above : below).push(item);
    }
    this.spacer.after(...above);
    this.results.append(...below);
    for (const { item } of kept.values()) item.setAttribute('aria-setsize', setsize);
    this.items = kept;
  }

  // A hit names its run (its input, or its label), its time and status; where the words
  // matched comes under it as the reason for the hit, then the session it belongs to.
  card(hit, index, setsize) {
    // A hit of today shows its time; an older one its date.
    const created = hit.created_at || '';
    const today = new Date().toISOString().slice(0, 10);
    const when = created.startsWith(today) ? created.slice(11, 16) : created.slice(0, 10);
    const excerpt = hit.excerpt;
    const inInput = excerpt && excerpt.field === 'input';
    const input = hit.input_excerpt || '';
    const run = inInput ? marked(excerpt) : input || hit.label || hit.id;
    const why = excerpt && !inInput
      ? [el('span', { class: 'turn-prefix' }, `matched ${FIELDS[excerpt.field] || ''}`), marked(excerpt)]
      : null;
    const item = el('li', { class: 'hit-item', 'aria-posinset': index + 1, 'aria-setsize': setsize },
      el('button', { type: 'button', class: 'hit', onclick: () => this.hooks.open(hit.id),
        'aria-current': hit.id === this.openId ? 'true' : 'false',
        dataset: { runId: hit.id, sessionId: hit.session_id } },
      el('span', { class: 'turn-line turn-top', title: `${input || hit.id} · ${hit.created_at || ''}` },
        el('span', { class: 'hit-run' }, el('span', { class: 'turn-prefix' }, 'you: '), run),
        el('span', { class: 'when' }, when)),
      why ? el('span', { class: 'turn-line hit-why', title: excerpt.text }, why) : null,
      el('span', { class: 'turn-line hit-session', title: hit.session_title || 'untitled' },
        el('span', { class: 'turn-prefix' }, 'in '), hit.session_title || 'untitled'),
      el('span', { class: 'turn-line facts' },
        el('span', { class: 'status', dataset: { status: hit.status } }, hit.status),
        hit.reason ? el('span', { class: 'reason' }, hit.reason) : null,
        typeof hit.duration_ms === 'number' ? el('span', { class: 'duration' }, ms(hit.duration_ms)) : null,
        hit.label ? el('span', { class: 'label' }, hit.label) : null,
        hit.score_summary && hit.score_summary.failed
          ? el('span', { class: 'badge' }, `evaluator fail ${hit.score_summary.failed}`) : null)));
    item.style.top = `${index * ROW}px`;
    return item;
  }
}
