// The page's entry: history (sessions and their runs), the composer, the run view, the Host
// badge, and the project-wide `/events` stream that keeps them current.
import { call } from './api.js';
import { el } from './dom.js';
import { exportBundle, importBundle } from './bundles.js';
import { compareView } from './compare.js';
import { Composer } from './composer.js';
import { Connection } from './connection.js';
import { HistoryFooter } from './footer.js';
import { flowOverview } from './graph.js';
import { HostLogs } from './host_logs.js';
import { HostPanel } from './host_panel.js';
import { showPanel, wireKeys, wirePanels } from './keys.js';
import { Welcome } from './welcome.js';
import { Notices } from './notices.js';
import { liveEvents } from './live_events.js';
import { RunList } from './run_list.js';
import { RunView } from './run_view.js';
import { runName, turnWhen } from './turn.js';
import { sending } from './sending.js';
import { sessionList } from './session_list.js';
import { Search } from './search.js';
import { Suites, saveSuite } from './suites.js';

const $ = (id) => document.getElementById(id);

const app = {
  sessions: [],
  olderSessions: null,  // the cursor of the next, older page of sessions (null: all shown)
  sessionReads: Promise.resolve(),  // the last read of the session list (readSessions)
  opened: null,  // the open session when it is not among those shown
  sessionId: null,
  view: null,
  picked: [],  // run ids ticked (Compare takes two, Export bundle any), oldest pick first
  composer: null,
  logs: null,
  runList: null,
  host: null,
  reloadTimer: 0,
  changed: new Set(),  // run ids an event named since the last reload

  notices: null,
  connection: null,
  search: null,   // the search box over all history (search.js)
  footer: null,   // the history's size and retention policy (footer.js)
  suites: null,   // the Suites view and a suite run's report (suites.js)

  notice(text, owner) {
    this.notices.show(text, owner);
  },

  fail(error) {
    this.notices.fail(error);
  },

  // A session picked in the list: the open one (or the one being opened) is only shown, not
  // read again; its thread follows history live.
  async pickSession(sessionId) {
    if (sessionId === this.sessionId && this.runList.sessionId === sessionId) {
      showPanel('thread');
      return;
    }
    await this.selectSession(sessionId);
  },

  async selectSession(sessionId, panel = 'thread') {
    this.sessionId = sessionId;
    showPanel(panel);
    await this.loadSessions();
    await this.loadRuns();
  },

  // The picked session's first page of runs (the list reads further pages as it scrolls).
  async loadRuns() {
    await this.runList.load(this.sessionId, this.view && this.view.runId);
    this.showRunsEmpty();
    this.threadRead();
    this.picked = this.picked.filter((id) => this.runList.has(id));
    this.updateCompare();
  },

  showRunsEmpty() {
    $('runs-empty').textContent = this.sessionId
      ? 'No runs in this session yet: type a message below and press Ctrl+Enter.'
      : 'No session picked: type a message below and press Ctrl+Enter to start one, or pick a session.';
    $('runs-empty').hidden = this.runList.runs.length > 0;
  },

  pickBox(run) {
    // Named as the turn reads (its label, else its input) with its time, not its id.
    const box = el('input', { type: 'checkbox',
      'aria-label': `Pick "${runName(run)}", ${turnWhen(run)}, to compare or export` });
    box.checked = this.picked.includes(run.id);
    box.addEventListener('change', () => {
      this.picked = this.picked.filter((id) => id !== run.id);
      if (box.checked) this.picked.push(run.id);
      this.updateCompare();
      this.runList.redraw();
    });
    return box;
  },

  updateCompare() {
    $('compare').disabled = this.picked.length !== 2;
    const runs = this.picked.length;
    $('save-suite').disabled = runs === 0;
    $('save-suite').textContent = runs ? `Save ${runs} picked run${runs > 1 ? 's' : ''} as a suite`
      : 'Save as suite';
    $('export-bundle').textContent = runs ? `Export ${runs} picked run${runs > 1 ? 's' : ''}`
      : 'Export bundle';
  },

  async compare() {
    const created = Object.fromEntries(this.picked.map((id) => [id, (this.runList.find(id) || {}).created_at]));
    this.showPane(await compareView(this.picked, created));
  },

  // A view other than a run's (Compare, Suites, a suite report) in the run pane.
  showPane(node) {
    if (this.view) this.view.close();
    this.view = null;
    $('run-pane').replaceChildren(node);
    showPanel('run');
  },

  async saveSuite() {
    const runs = this.picked.length;
    const name = window.prompt(`Name the suite of ${runs} run${runs > 1 ? 's' : ''}:`,
      `suite ${new Date().toISOString().slice(0, 16).replace('T', ' ')}`);
    if (name === null) return;
    const suite = await saveSuite(name, this.picked);
    this.notice(`Suite "${suite.name}" saved with ${suite.case_count} cases.`);
    await this.suites.list();
  },

  // After a delete: no session picked, no run shown, the lists read again.
  async forgetSession() {
    this.sessionId = null;
    this.suites.close();
    if (this.view) this.view.close();
    this.view = null;
    $('run-pane').replaceChildren(el('p', { class: 'hint empty' },
      'No run open: send a message, or pick a turn of the thread.'));
    this.showIdle();
    await this.loadSessions();
    await this.loadRuns();
  },

  // No run open: a Flow's graph (read from source) under the hint, from the first moment.
  showIdle() {
    const pane = $('run-pane');
    const graph = this.composer && this.composer.graph;
    if (this.view || !graph || !pane.querySelector(':scope > .empty')
        || pane.querySelector('.graph-overview')) return;
    pane.append(flowOverview(graph));
  },

  showLogs() {
    this.logs.open();
  },

  editRerun(run) {
    this.composer.editRerun(run);
  },

  async openRun(runId) {
    this.suites.close();
    if (this.view) this.view.close();
    const view = new RunView(runId, this);
    this.view = view;
    this.composer.runOpened(runId);
    $('run-pane').replaceChildren(view.node);
    showPanel('run');
    this.search.setOpen(runId);
    // The address keeps the open run: a reload (or a link) comes back to it.
    history.replaceState(null, '', `#${runId}`);
    await view.open();
    // Another session's run, or a session just created by Send: its list is read anew.
    const sessionId = view.detail && view.detail.session_id;
    if (sessionId && (sessionId !== this.sessionId || sessionId !== this.runList.sessionId)) {
      await this.selectSession(sessionId, 'run');
      this.runList.reveal(runId);
    } else {
      this.runList.setOpen(runId);
      if (!this.runList.has(runId)) await this.runList.refresh([runId]);
    }
  },

  // The thread was read (again): the composer learns whether its latest run asks for input.
  threadRead() {
    const latest = this.runList.sessionId === this.sessionId ? this.runList.runs[0] : null;
    this.composer.setLatest(latest || null);
  },
};
Object.assign(app, sending, liveEvents, sessionList);

// "1 session", "2 sessions".
function count(n, noun) {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function guard(action) {
  return async (event) => {
    try {
      await action(event);
    } catch (error) {
      app.fail(error);
    }
  };
}

// The header names the project: its folder's name, the whole path on hover and for readers.
async function showProject(welcome) {
  const response = await fetch('/health', { credentials: 'same-origin' });
  if (!response.ok) return;
  const health = await response.json();
  app.footer.show(health);
  const { project } = health;
  if (!project) return;
  const name = project.split('/').filter(Boolean).pop() || project;
  $('project').replaceChildren(el('strong', {}, name), ' ', el('span', { class: 'path' }, project));
  $('project').title = project;
  app.notices.project = project;
  welcome.forProject(project);
}

function wire() {
  app.notices = new Notices($('notice'), $('notice-dismiss'));
  app.welcome = new Welcome($('welcome'), $('help-button'));
  const composer = new Composer({ tabs: $('composer-tabs'), message: $('message'),
    hint: $('composer-hint'), metadata: $('metadata'), attachments: $('attachments'),
    examples: $('composer-examples'), banner: $('composer-mode'), form: $('composer') });
  $('attach').addEventListener('change', guard(async (event) => {
    await composer.attach(event.target.files);
    event.target.value = '';
  }));
  $('add-uri').addEventListener('click', () => {
    composer.addUri($('file-uri').value);
    $('file-uri').value = '';
  });
  app.composer = composer;
  app.logs = new HostLogs($('host-logs'));
  app.runList = new RunList($('run-list'), { open: (id) => app.openRun(id),
    pickBox: (run) => app.pickBox(run), failed: (error) => app.fail(error) });
  app.footer = new HistoryFooter($('history-size'));
  app.search = new Search({ form: $('search'), box: $('search-q'), filters: $('search-filters'),
    statuses: $('search-statuses'), labelled: $('search-labelled'), failed: $('search-failed'),
    state: $('search-state'), results: $('search-results'), column: document.querySelector('.sessions') },
  { open: (id) => app.openRun(id), failed: (error) => app.fail(error) });
  app.suites = new Suites({ show: (node) => app.showPane(node), failed: (error) => app.fail(error),
    compare: (left, right) => compareView([left, right]).then((view) => app.showPane(view)) });
  $('suites-button').addEventListener('click', guard(() => app.suites.list()));
  $('save-suite').addEventListener('click', guard(() => app.saveSuite()));
  app.host = new HostPanel($('host-state'), $('host-body'), (error) => app.fail(error),
    { logs: () => app.logs.open(), failing: (failure) => composer.hostFailing(failure) });
  $('export-bundle').addEventListener('click', guard(async () => {
    if (await exportBundle(app.sessionId, app.picked)) app.notice('Bundle exported.');
  }));
  $('import-bundle').addEventListener('change', guard(async (event) => {
    const [file] = event.target.files;
    event.target.value = '';
    if (!file) return;
    const imported = await importBundle(file);
    app.footer.soon();
    app.notice(`Imported ${count(Object.keys(imported.sessions).length, 'session')} and ${count(Object.keys(imported.runs).length, 'run')}.`);
    // The view goes to what came in: the first imported session's thread.
    const [first] = Object.values(imported.sessions);
    if (first) await app.selectSession(first);
    else await app.loadSessions();
  }));
  $('delete-all').addEventListener('click', guard(async () => {
    // The counts of what goes: from the list when it shows every session, else asked for.
    const counts = app.olderSessions ? (await call('GET', '/history')).counts : {
      sessions: app.sessions.length,
      runs: app.sessions.reduce((n, s) => n + (s.run_count || 0), 0) };
    if (!window.confirm(`Delete all history: ${counts.sessions} sessions, ${counts.runs} runs, their events and files? This cannot be undone.`)) return;
    await call('DELETE', '/sessions');
    await app.forgetSession();
    app.footer.refresh().catch(() => {});
  }));
  wireKeys({ shortcuts: $('shortcuts'), hostPanel: document.querySelector('.host-panel'),
    logs: app.logs, welcome: app.welcome, message: $('message') });
  wirePanels((panel) => showPanel(panel));
  $('host-logs-button').addEventListener('click', () => app.logs.toggle());
  $('compare').addEventListener('click', guard(() => app.compare()));
  const submit = guard(async (event) => {
    if (event) event.preventDefault();
    const body = composer.body();
    if (body) await app.send(body, composer.title());
  });
  $('composer').addEventListener('submit', submit);
  $('message').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) submit(event);
  });
  $('new-session').addEventListener('click', guard(async () => {
    const session = await call('POST', '/sessions', { title: 'untitled' });
    await app.selectSession(session.id);
  }));
  $('rename-session').addEventListener('click', guard(async () => {
    await call('PATCH', `/sessions/${encodeURIComponent(app.sessionId)}`,
      { title: $('session-title').value });
    app.opened = null;
    await app.loadSessions();
  }));
  $('more-sessions').addEventListener('click', guard(() => app.moreSessions()));
  $('delete-session').addEventListener('click', guard(async () => {
    const current = await app.currentSession();
    if (!current) return;
    const what = `Delete session "${current.title || 'untitled'}" and its ${current.run_count ?? 0} runs?`;
    if (!window.confirm(what)) return;
    await call('DELETE', `/sessions/${encodeURIComponent(current.id)}`);
    await app.forgetSession();
  }));
  $('restart-host').addEventListener('click', guard(async () => {
    app.host.show(await call('POST', '/host/restart', {}));
  }));
  composer.load().then(() => app.showIdle(), (e) => app.fail(e));
  app.connection = new Connection($('connection'), { events: (source) => app.watchProject(source),
    live: () => app.live(), lost: () => app.lost() });
  app.connection.open();
  showProject(app.welcome).catch(() => {});
  app.loadSessions().catch((e) => app.fail(e));
  app.host.refresh().catch(() => {});
  const follow = () => {
    const linked = /^#(run_[0-9a-f]+)$/.exec(location.hash);
    if (linked && !(app.view && app.view.runId === linked[1])) {
      // A link shows its run's turn in the thread as well.
      app.openRun(linked[1]).then(() => app.runList.reveal(linked[1]), (e) => app.fail(e));
    }
  };
  window.addEventListener('hashchange', follow);
  follow();
}

wire();
