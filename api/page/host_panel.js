// The Host panel: what `/host` says (state, generation, pid, restarts, crashes, warnings
// with their fix) and Start / Stop / Restart. It re-reads `/host` at every `host.state`.
import { call } from './api.js';
import { append, button, el } from './dom.js';

export class HostPanel {
  constructor(badge, body, notice) {
    this.badge = badge;
    this.body = body;
    this.notice = notice;
  }

  async refresh() {
    this.show(await call('GET', '/host'));
  }

  // The connection is lost: the Host's state is not known, and is not shown as its last value.
  unknown() {
    this.badge.dataset.state = 'unknown';
    this.badge.dataset.generation = '';
    this.badge.textContent = 'Host: unknown (connection lost)';
  }

  show(host) {
    this.badge.dataset.state = host.state;
    this.badge.dataset.generation = host.generation ?? '';
    this.badge.textContent = `Host: ${host.state}${host.generation ? ` (generation ${host.generation})` : ''}`;
    if (!('restarts' in host)) return;  // a host.state event: `/host` has the rest
    const facts = [['pid', host.pid], ['url', host.url], ['start', host.start_mode],
      ['restarts', host.restarts], ['crashes', host.crashes], ['last exit code', host.last_exit_code],
      ['backoff until', host.backoff_until]];
    const warnings = (host.warnings || []).map((w) => el('li', { class: 'warning' },
      typeof w === 'string' ? w : `${w.code}${w.message ? `: ${w.message}` : ''}${w.fix ? ` (fix: ${w.fix})` : ''}`));
    this.body.replaceChildren();
    append(this.body, [
      el('dl', { class: 'host-facts' }, facts.filter(([, v]) => v !== null && v !== undefined)
        .map(([k, v]) => [el('dt', {}, k), el('dd', {}, String(v))])),
      warnings.length ? el('ul', { class: 'warnings', 'aria-label': 'Host warnings' }, warnings) : null,
      el('div', { class: 'actions' },
        button('Start Host', () => this.act('start')), button('Stop Host', () => this.act('stop')))]);
  }

  async act(action) {
    try {
      this.show(await call('POST', `/host/${action}`, {}));
      await this.refresh();
    } catch (error) {
      this.notice(error);
    }
  }
}
