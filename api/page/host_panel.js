// The Host panel: what `/host` says (state, generation, pid, restarts, crashes, warnings
// with their fix) and Start / Stop / Restart. It re-reads `/host` at every `host.state`.
// A Host backing off or in a crashloop says why first: its last exception line, then its
// traceback without the Playground's own frames (`last_error`), the full log one click
// away; the panel opens by itself once per failing generation, before any run.
import { call } from './api.js';
import { append, button, el } from './dom.js';

export class HostPanel {
  // hooks: logs() opens the Host logs panel; failing(lastError or null) tells the composer.
  constructor(badge, body, notice, hooks = {}) {
    this.badge = badge;
    this.body = body;
    this.notice = notice;
    this.hooks = hooks;
    this.shownError = null;  // the generation whose error opened the panel
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
    const failure = host.last_error || null;
    if (this.hooks.failing) this.hooks.failing(failure);
    append(this.body, [
      failure ? this.lastError(failure) : null,
      el('dl', { class: 'host-facts' }, facts.filter(([, v]) => v !== null && v !== undefined)
        .map(([k, v]) => [el('dt', {}, k), el('dd', {}, String(v))])),
      warnings.length ? el('ul', { class: 'warnings', 'aria-label': 'Host warnings' }, warnings) : null,
      el('div', { class: 'actions' },
        button('Start Host', () => this.act('start')), button('Stop Host', () => this.act('stop')))]);
  }

  // Why the Host died: the exception line, then the trimmed traceback, then the full log.
  lastError(failure) {
    const panel = this.body.closest('details');
    if (panel && this.shownError !== failure.generation) {
      this.shownError = failure.generation;
      panel.open = true;
    }
    const left = failure.frames_left_out
      ? ` (${failure.frames_left_out} frames of the Playground's preloader and runpy left out)` : '';
    return el('section', { class: 'host-error', 'aria-label': 'Why the Host stopped' },
      el('h3', {}, `The Host cannot start (generation ${failure.generation}):`),
      el('p', { class: 'host-exception' }, failure.exception),
      el('details', { class: 'host-traceback' }, el('summary', {}, `Traceback${left}`),
        el('pre', { tabindex: 0, role: 'region', 'aria-label': 'Traceback' },
          (failure.traceback || []).join('\n'))),
      this.hooks.logs ? button('Full Host log', () => this.hooks.logs()) : null);
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
