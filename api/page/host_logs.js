// The Host logs panel: the kept lines, then live (`/host/logs?follow=1`). The browser's own
// reconnect sends Last-Event-ID (the last line's offset) and the route resumes after it, so
// no line shows twice. Opening the panel again, or reopening a stream the browser gave up
// on (a 503 while no daemon answers), starts after the last line shown (`?after=`). The
// panel keeps the newest MAX_LINES.
import { API } from './api.js';
import { button, el } from './dom.js';
import { PROJECT_EVENT } from './wire.js';

const MAX_LINES = 2000;
const RETRY_MS = 2000;

export class HostLogs {
  constructor(node) {
    this.node = node;
    this.events = null;
    this.retry = 0;
    this.last = -1;
    // A <pre> is generic to assistive technology, which may not name it: the lines are a log.
    this.list = el('pre', { class: 'log-lines', role: 'log', tabindex: 0, 'aria-label': 'Host log lines' });
    this.empty = el('p', { class: 'log-empty' },
      'Nothing logged yet: the Host writes here once it starts (with the first run, or Start Host).');
  }

  isOpen() {
    return !this.node.hidden;
  }

  toggle() {
    if (this.node.hidden) this.open();
    else this.close();
  }

  open() {
    if (!this.node.hidden) return;  // already open and following
    this.node.hidden = false;
    this.node.replaceChildren(
      el('div', { class: 'panel-head' }, el('h2', {}, 'Host logs'), button('Close logs', () => this.close())),
      this.empty, this.list);
    this.empty.hidden = this.list.childNodes.length > 0;
    this.connect();
  }

  connect() {
    const events = new EventSource(`${API}/host/logs?follow=1&after=${this.last + 1}`);
    this.events = events;
    events.addEventListener(PROJECT_EVENT.LOG, (e) => this.line(JSON.parse(e.data)));
    events.addEventListener('log.overflow', () => this.list.append('… older lines were dropped\n'));
    events.addEventListener('error', () => {
      if (events.readyState !== EventSource.CLOSED || this.events !== events) return;
      this.events = null;
      this.retry = setTimeout(() => {
        if (!this.node.hidden) this.connect();
      }, RETRY_MS);
    });
  }

  line(line) {
    this.last = line.offset;
    this.empty.hidden = true;
    const stick = this.list.scrollTop + this.list.clientHeight >= this.list.scrollHeight - 4;
    this.list.append(el('span', { class: `log ${line.stream}` },
      `[${line.generation}] ${line.text}\n`));
    while (this.list.childNodes.length > MAX_LINES) this.list.firstChild.remove();
    if (stick) this.list.scrollTop = this.list.scrollHeight;
  }

  close() {
    clearTimeout(this.retry);
    if (this.events) this.events.close();
    this.events = null;
    this.node.hidden = true;
  }
}
