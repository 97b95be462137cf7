// The run's phases, validate → save → start|restart → ready → send → complete. The only
// live region of the page: screen readers hear phase changes, never the token stream.
//
// A run that ended otherwise than completed (cancelled, interrupted, failed) marks every
// step still open with that end, and the complete step with it too: the stepper never shows
// a step completed after the run ended another way, replayed events included.
import { el } from './dom.js';
import { PHASE, SUCCESS } from './wire.js';

const STEPS = ['validate', 'save', 'start', 'ready', 'send', 'complete'];
const FINISHED = SUCCESS;  // a run that ended so leaves its steps as they are
const OPEN = new Set(['pending', PHASE.STARTED]);  // pending: the page's own, before any event

export class Stepper {
  constructor() {
    this.items = new Map();
    this.ending = null;  // {status, reason} once the run ended otherwise than completed
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
    // "complete: completed" carries the run's status: a cancelled run's complete is that.
    let state = step === 'complete' && event.state === PHASE.COMPLETED && event.status
      && !FINISHED.has(event.status) ? event.status : event.state;
    // The daemon closes a phase a run left open as "cancelled" whatever ended the run; the
    // step says the run's own end (interrupted), whether that came before or after.
    if (this.ending && state === PHASE.CANCELLED && event.reason === this.ending.reason) {
      state = this.ending.status;
    }
    this.set(item, event.phase, state, event.reason);
    if (this.ending) this.markOpen();
  }

  // The run's final status: the open steps take its end.
  end(status, reason) {
    if (FINISHED.has(status)) return;
    this.ending = { status, reason };
    this.markOpen();
  }

  markOpen() {
    const { status, reason } = this.ending;
    for (const [step, item] of this.items) {
      const closed = item.dataset.state === PHASE.CANCELLED && item.dataset.reason === reason;
      if (OPEN.has(item.dataset.state) || closed
          || (step === 'complete' && item.dataset.state === PHASE.COMPLETED)) {
        const reached = item.dataset.state !== 'pending' || step === 'complete';
        this.set(item, item.dataset.label || step, reached ? status : 'not reached',
          reached ? reason : null);
      }
    }
  }

  set(item, label, state, reason) {
    item.dataset.state = state === 'not reached' ? PHASE.SKIPPED : state;
    if (reason) item.dataset.reason = reason;
    else delete item.dataset.reason;
    item.dataset.label = label;
    const why = reason && state !== PHASE.COMPLETED && state !== PHASE.STARTED ? ` (${reason})` : '';
    item.textContent = `${label}: ${state}${why}`;
  }
}
