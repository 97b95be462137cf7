// The run's phases, validate → save → start|restart → ready → send → complete. The only
// live region of the page: screen readers hear phase changes, never the token stream.
import { el } from './dom.js';

const STEPS = ['validate', 'save', 'start', 'ready', 'send', 'complete'];

export class Stepper {
  constructor() {
    this.items = new Map();
    this.node = el('ol', { class: 'stepper', 'aria-live': 'polite', 'aria-label': 'Phases' });
    for (const step of STEPS) {
      const item = el('li', { dataset: { phase: step, state: 'pending' } }, step);
      this.items.set(step, item);
      this.node.append(item);
    }
  }

  update(event) {
    const step = event.phase === 'restart' ? 'start' : event.phase;
    const item = this.items.get(step);
    if (!item) return;  // a phase this page does not know: skipped, as the contract says
    item.dataset.state = event.state;
    const why = event.state === 'failed' && event.reason ? ` (${event.reason})` : '';
    item.textContent = `${event.phase}: ${event.state}${why}`;
  }
}
