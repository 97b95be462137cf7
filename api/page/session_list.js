// The sessions column: the newest sessions a page at a time, older ones when asked, each
// with its run count and last activity, and the open session's title above the thread.
import { call, withPage } from './api.js';
import { button, el } from './dom.js';

const $ = (id) => document.getElementById(id);

const SESSION_PAGE = 100;  // sessions read at a time

// An ISO time as a list shows it: its time when it is today's, else its date.
function when(iso) {
  const today = new Date().toISOString().slice(0, 10);
  return iso.startsWith(today) ? iso.slice(11, 16) : iso.slice(0, 10);
}

// Mixed into `app` (app.js): `this` is the app.
export const sessionList = {
  // The newest sessions, a page at a time (a year of history is thousands of them): the
  // pages already shown are read again, older ones only when "Older sessions" is pressed.
  loadSessions() {
    return this.readSessions(async () => {
      const want = Math.min(1000, Math.max(SESSION_PAGE, this.sessions.length));
      const doc = await call('GET', `/sessions?order=newest&limit=${want}`);
      this.sessions = doc.sessions;
      this.olderSessions = doc.next_after;
      await this.showSessions();
    });
  },

  moreSessions() {
    return this.readSessions(async () => {
      if (!this.olderSessions) return;
      const doc = await call('GET', `/sessions?order=newest&limit=${SESSION_PAGE}&after=${encodeURIComponent(this.olderSessions)}`);
      this.sessions = withPage(this.sessions, doc.sessions);
      this.olderSessions = doc.next_after;
      await this.showSessions();
    });
  },

  // The list's reads one at a time, each sized from what the one before it left: a reload
  // of the first page that answered after "Older sessions" put the shorter list back.
  readSessions(read) {
    const next = this.sessionReads.then(read, read);
    this.sessionReads = next.catch(() => {});
    return next;
  },

  // The open session: from the list, else read once (one opened from search or a link
  // can be older than the pages shown).
  async currentSession() {
    const listed = this.sessions.find((s) => s.id === this.sessionId);
    if (listed || !this.sessionId) return listed || null;
    if (!this.opened || this.opened.id !== this.sessionId) {
      this.opened = await call('GET', `/sessions/${encodeURIComponent(this.sessionId)}`).catch(() => null);
    }
    return this.opened && this.opened.id === this.sessionId ? this.opened : null;
  },

  async showSessions() {
    $('sessions-empty').hidden = this.sessions.length > 0;
    // Each session with its run count and its last activity (its time today, else its date).
    $('session-list').replaceChildren(...this.sessions.map((s) => el('li', {},
      button([`${s.title || 'untitled'} (${s.run_count ?? 0})`,
        s.last_activity_at ? el('span', { class: 'session-when', title: `last activity ${s.last_activity_at}` },
          ` · ${when(s.last_activity_at)}`) : null], () => this.pickSession(s.id), {
        class: 'session-item', 'aria-current': s.id === this.sessionId ? 'true' : null,
        dataset: { sessionId: s.id, lastActivity: s.last_activity_at || '' },
      }))));
    $('more-sessions').hidden = !this.olderSessions;
    $('session-list').dataset.loaded = String(this.sessions.length);
    const current = await this.currentSession();
    $('session-head').hidden = !current;
    if (current && document.activeElement !== $('session-title')) {
      $('session-title').value = current.title || '';
    }
  },

};
