// The Host logs panel: the kept lines, then live (`/host/logs?follow=1`). The route replays
// from `after`, not from Last-Event-ID, so lines already shown are skipped by offset after a
// reconnect; the panel keeps the newest MAX_LINES.
import { API } from './api.js';
import { button, el } from './dom.js';

const MAX_LINES = 2000;

export class HostLogs {
  constructor(node) {
    this.node = node;
    this.events = null;
    this.last = -1;
    this.list = el('pre', { class: 'log-lines' });
  }

  toggle() {
    if (this.events) this.close();
    else this.open();
  }

  open() {
    this.node.hidden = false;
    this.node.replaceChildren(
      el('div', { class: 'panel-head' }, el('h2', {}, 'Host logs'), button('Close logs', () => this.close())),
      this.list);
    const events = new EventSource(`${API}/host/logs?follow=1&after=${this.last + 1}`);
    this.events = events;
    events.addEventListener('log', (e) => this.line(JSON.parse(e.data)));
    events.addEventListener('log.overflow', () => this.list.append('… older lines were dropped\n'));
  }

  line(line) {
    if (line.offset <= this.last) return;
    this.last = line.offset;
    const stick = this.list.scrollTop + this.list.clientHeight >= this.list.scrollHeight - 4;
    this.list.append(el('span', { class: `log ${line.stream}` },
      `[${line.generation}] ${line.text}\n`));
    while (this.list.childNodes.length > MAX_LINES) this.list.firstChild.remove();
    if (stick) this.list.scrollTop = this.list.scrollHeight;
  }

  close() {
    if (this.events) this.events.close();
    this.events = null;
    this.node.hidden = true;
  }
}
