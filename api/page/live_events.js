// The page kept current by the project-wide `/events` stream (connection.js opens and
// reopens it): runs and sessions that changed read again (batched), the Host badge, and
// what the page shows while the connection is lost and once it is back.
import { TERMINAL } from './api.js';
import { DAEMON } from './notices.js';
import { setConnectionLost } from './turn.js';
import { HOST_STATE, PROJECT_EVENT, REASON } from './wire.js';

// Mixed into `app` (app.js): `this` is the app.
export const liveEvents = {
  runsChanged(runId) {
    // Many events can arrive together (a run's status, its label): reload once for them,
    // the list's first page and the changed runs the list holds further down.
    if (runId) this.changed.add(runId);
    clearTimeout(this.reloadTimer);
    this.reloadTimer = setTimeout(() => {
      const changed = [...this.changed];
      this.changed.clear();
      this.runList.refresh(changed).then(() => {
        this.showRunsEmpty();
        this.threadRead();
      }, (e) => this.fail(e));
      this.loadSessions().catch((e) => this.fail(e));
      this.footer.soon();
      this.search.refresh();
    }, 100);
  },

  // Back on line: what was shown as unknown is read again, and the daemon's notice ends.
  live() {
    setConnectionLost(false);
    this.notices.end(DAEMON);
    this.host.refresh().catch(() => {});
    if (this.view) this.view.connectionBack();
    this.runsChanged();
  },

  lost() {
    setConnectionLost(true);
    this.runList.redraw();
    this.host.unknown();
    if (this.view) this.view.connectionLost();
  },

  // The `/events` stream (live only, a snapshot first); connection.js reopens it.
  watchProject(events) {
    const on = (kind, handler) => events.addEventListener(kind, (e) => handler(JSON.parse(e.data)));
    on(PROJECT_EVENT.HOST_STATE, (d) => {
      // A ready Host's card gives the text composer its examples (a Flow's tabs are read
      // from source and need no Host).
      if (d.state === HOST_STATE.READY && !this.composer.tabs
          && this.composer.examples.dataset.read !== String(d.generation)) {
        this.composer.examples.dataset.read = String(d.generation);  // once per generation
        this.composer.load().catch(() => {});
      }
      this.host.show(d);
      this.host.refresh().catch(() => {});
    });
    on(PROJECT_EVENT.RUN_STATUS, (d) => {
      if (TERMINAL.has(d.status)) this.notices.end(`run:${d.run_id}`);  // a 409 about it
      if (d.reason === REASON.RUNTIME_RESTARTED) {
        this.notice(`A file changed outside the run: the Host restarted and ${d.run_id} ended (runtime_restarted).`);
      }
      this.runsChanged(d.run_id);
    });
    on(PROJECT_EVENT.RUN_UPDATED, (d) => this.runsChanged(d.run_id));
    on(PROJECT_EVENT.SESSION_UPDATED, () => this.runsChanged());
    // Made or deleted elsewhere (the CLI, another tab, the retention policy): the list is
    // read again; the open session gone (or all of history) closes it.
    on(PROJECT_EVENT.SESSION_CREATED, () => this.runsChanged());
    on(PROJECT_EVENT.SESSION_DELETED, (d) => {
      if (this.sessionId && (d.session_id === null || d.session_id === this.sessionId)) {
        this.forgetSession().catch((e) => this.fail(e));
      } else {
        this.runsChanged();
      }
    });
  },
};
