// The project-wide `/events` stream and the header's connection indicator: live,
// reconnecting (with the attempt) or lost. The page owns the reconnect: a stream that
// errs is closed and opened again after a back-off (0.5 s doubling up to 5 s), and each
// error asks `/host` at once whether the daemon answers, so a dead daemon shows as
// lost in well under the browser's own reconnect delay.
import { API } from './api.js';

const FIRST_DELAY_MS = 500;
const MAX_DELAY_MS = 5000;

export class Connection {
  // handlers: events(source) wires a new stream's listeners; live() after a (re)connect;
  // lost() when the daemon stops answering.
  constructor(indicator, handlers) {
    this.indicator = indicator;
    this.handlers = handlers;
    this.attempt = 0;
    this.source = null;
    this.timer = 0;
    this.state = '';
    this.show('reconnecting', 'connecting…');
  }

  open() {
    clearTimeout(this.timer);
    const source = new EventSource(`${API}/events`);
    this.source = source;
    source.addEventListener('open', () => {
      if (this.source !== source) return;
      this.attempt = 0;
      this.show('live', 'live');
      this.handlers.live();
    });
    source.addEventListener('error', () => {
      if (this.source !== source) return;
      source.close();
      this.source = null;
      this.retry();
    });
    this.handlers.events(source);
  }

  async retry() {
    this.attempt += 1;
    const attempt = this.attempt;
    const delay = Math.min(FIRST_DELAY_MS * 2 ** (attempt - 1), MAX_DELAY_MS);
    this.timer = setTimeout(() => this.open(), delay);
    const answers = await this.daemonAnswers();
    if (attempt !== this.attempt || this.source) return;  // a newer attempt decided already
    const seconds = Math.round(delay / 100) / 10;
    if (answers) {
      this.show('reconnecting', `reconnecting (attempt ${attempt}, in ${seconds} s)`);
    } else {
      this.show('lost', `lost: no daemon answers (attempt ${attempt}, next in ${seconds} s)`);
      this.handlers.lost();
    }
  }

  async daemonAnswers() {
    try {
      const response = await fetch(`${API}/host`, { credentials: 'same-origin' });
      return response.ok;
    } catch {
      return false;  // the front itself is gone
    }
  }

  show(state, text) {
    this.state = state;
    this.indicator.dataset.state = state;
    this.indicator.textContent = `Connection: ${text}`;
  }

  get live() {
    return this.state === 'live';
  }
}
