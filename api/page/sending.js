// Send from the composer, as the page's `app` does it: a new run in the open session (a
// session made first when none is open), an answer to the session's question (a resume), or
// an edited rerun. Create, resume and rerun answer 202 with the new run, which opens; a 409
// names the run already active instead, and the draft stays.
import { call } from './api.js';
import { conflictNotice } from './notices.js';

// Mixed into `app` (app.js): `this` is the app.
export const sending = {
  // Create, resume and rerun answer 202 with the new run, which the view opens. A 409 names
  // the active run instead: the view stays, the draft stays in the composer, and a notice
  // names that run and its session, with a link to it and its Cancel. `sent` runs on the
  // 202 itself, before the view opens (which reads the run, its session and its thread):
  // what the person types meanwhile is their next message, never cleared after it.
  async start(request, sent = () => {}) {
    let started;
    try {
      started = await request();
    } catch (error) {
      if (error.status !== 409 || !error.detail.active_run_id) throw error;
      await conflictNotice(this.notices, error.detail.active_run_id, (e) => this.fail(e));
      return false;
    }
    this.notices.end('action');
    sent();
    await this.openRun(started.run_id);
    // A turn this page started comes into view, wherever the reader had scrolled.
    this.runList.reveal(started.run_id);
    return true;
  },

  async send(body, title) {
    const mode = this.composer.mode();
    if (mode.kind === 'edit') {
      return this.start(() => call('POST', `/runs/${encodeURIComponent(mode.runId)}/rerun`, body),
        () => {
          this.composer.pick(null);
          this.composer.clear();
        });
    }
    const sent = () => this.composer.clear();
    if (mode.kind === 'answer') {
      // The session's question answered: the same conversation goes on (a resume).
      return this.start(() => call('POST', `/runs/${encodeURIComponent(mode.runId)}/resume`, body), sent);
    }
    if (!this.sessionId) {
      const session = await call('POST', '/sessions', { title: title.slice(0, 60) });
      this.sessionId = session.id;
    }
    return this.start(() => call('POST', `/sessions/${encodeURIComponent(this.sessionId)}/runs`, body), sent);
  },
};
