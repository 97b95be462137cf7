// A session's runs as cards, newest first. Only the cards in view (and a margin) are in the
// DOM: a session with thousands of runs scrolls like one with ten. Rows have one height,
// so a card's place is its index times ROW.
import { el, ms } from './dom.js';

const ROW = 56;      // px; keep in step with .run-item in style.css
const MARGIN = 10;   // rows rendered above and below the visible ones

export class RunList {
  constructor(node, hooks) {
    this.node = node;
    this.hooks = hooks;  // open(runId), pickBox(run)
    this.runs = [];
    this.openId = null;
    this.window = '';
    this.frame = 0;
    node.addEventListener('scroll', () => {
      if (!this.frame) this.frame = requestAnimationFrame(() => this.render());
    });
  }

  show(runs, openId) {
    this.runs = runs;
    this.openId = openId;
    this.window = '';
    this.render();
  }

  render() {
    this.frame = 0;
    const count = this.runs.length;
    const first = Math.max(0, Math.floor(this.node.scrollTop / ROW) - MARGIN);
    const visible = Math.ceil((this.node.clientHeight || ROW * 10) / ROW);
    const last = Math.min(count, first + visible + 2 * MARGIN);
    const window = `${first}:${last}`;
    if (window === this.window) return;
    this.window = window;
    const spacer = el('li', { class: 'run-spacer', 'aria-hidden': 'true' });
    spacer.style.height = `${count * ROW}px`;
    const items = [];
    for (let i = first; i < last; i += 1) items.push(this.card(this.runs[i], i, count));
    this.node.replaceChildren(spacer, ...items);
  }

  card(run, index, count) {
    const item = el('li', { class: 'run-item', 'aria-posinset': index + 1, 'aria-setsize': count },
      el('button', {
        type: 'button', class: 'run-card', onclick: () => this.hooks.open(run.id),
        'aria-current': run.id === this.openId ? 'true' : null,
        dataset: { runId: run.id, status: run.status },
      },
      el('span', { class: 'status', dataset: { status: run.status } }, run.status),
      run.reason ? el('span', { class: 'reason' }, run.reason) : null,
      run.duration_ms !== null ? el('span', { class: 'duration' }, ms(run.duration_ms)) : null,
      run.label ? el('span', { class: 'label' }, run.label) : null,
      run.score_summary && run.score_summary.evaluators ? el('span', { class: 'badge' },
        `evaluator ${run.score_summary.evaluators} · fail ${run.score_summary.failed}`) : null,
      el('span', { class: 'when' }, (run.created_at || '').slice(11, 19))),
      this.hooks.pickBox(run));
    item.style.top = `${index * ROW}px`;
    return item;
  }
}
