// Suites on the page: picked runs saved as a suite, the Suites view (each suite with "Run"
// and its last report), and a suite run's report filling in live from its progress events
// (`/suite-runs/{id}/events`): per case the status before → after, the duration delta, the
// answer's diff size, data and file changes and the score deltas, each done row opening
// Compare of its baseline and its new run. A suite kept as a file in the project shows its
// path; a file that could not be read is listed with its line. A case run several times
// shows its mark (flaky: its runs disagree; changed: they agree, not with the baseline),
// the share of runs with the baseline's status and each score's spread. Counts only: the
// page gives no verdict, as the API gives none.
import { API, call } from './api.js';
import { append, button, el, ms } from './dom.js';
import { SUITE_RUN_OVER, SUITE_RUN_STATUS } from './wire.js';

const OVER = SUITE_RUN_OVER;
const REREAD_MS = 150;  // progress events come in bursts: the report is read once for them

// `picked`: run ids; each becomes a case (a run in a resume chain replays its chain).
export function saveSuite(name, picked) {
  return call('POST', '/suites', { name, cases: picked.map((runId) => ({ run_id: runId })) });
}

function signed(value, unit = '') {
  if (typeof value !== 'number') return '';
  const rounded = Math.round(value * 1000) / 1000;
  return `${rounded > 0 ? '+' : ''}${unit === 'ms' ? ms(rounded) : rounded}`;
}

// A code fingerprint's first characters (the whole one in the line's title).
function short(fingerprint) {
  return fingerprint ? String(fingerprint).slice(0, 12) : '';
}

function spread(s) {
  if (!s || typeof s.min !== 'number') return '';
  const n = (v) => String(Math.round(v * 1000) / 1000);
  return s.min === s.max ? n(s.min) : `${n(s.min)}–${n(s.max)} (median ${n(s.median)})`;
}

// The mark of a case run several times (or a changed one): what a reader looks at first.
const MARK_WORDS = { flaky: 'flaky', changed: 'changed', same: 'same' };

function mark(row) {
  const name = row.mark || (row.changed ? 'changed' : 'same');
  return el('span', { class: 'case-mark', dataset: { mark: name },
    title: name === 'flaky' ? 'Its own runs disagree: the suite cannot tell a change here.'
      : name === 'changed' ? 'Every repetition agrees, and not with the baseline.' : null },
  MARK_WORDS[name] || name);
}

function mean(value) {
  return typeof value === 'number' ? String(Math.round(value * 1000) / 1000) : '–';
}

// The suite run every case's baseline comes from, when they all come from one (else null:
// the runs the suite was saved from, or a mix).
function baselineOf(detail) {
  const from = new Set((detail.cases || []).map((c) => (c.baseline || {}).suite_run_id || null));
  return from.size === 1 ? [...from][0] : null;
}

// A case named by what it sends (its first turn's input), its kind when not a single run
// (`chain of 2`, `session of 3`) and when its run of this suite run started.
function caseName(row) {
  const kind = row.kind && row.kind !== 'run' ? `${row.kind} of ${row.turns}` : '';
  const at = row.started_at ? row.started_at.slice(11, 19) : '';
  const input = row.input_excerpt || row.kind || '';
  return el('span', { class: 'case-run', title: [input, kind, row.started_at].filter(Boolean).join(' · ') },
    input, kind ? el('span', { class: 'hint' }, ` (${kind})`) : null,
    at ? el('span', { class: 'when' }, ` ${at}`) : null);
}

export class Suites {
  // hooks: show(node) puts a view in the run pane; compare(left, right) opens Compare;
  // failed(error).
  constructor(hooks) {
    this.hooks = hooks;
    this.events = null;
    this.timer = 0;
    this.reportId = null;
    this.shown = null;  // the view last put in the pane
  }

  display(node) {
    this.shown = node;
    this.hooks.show(node);
  }

  close() {
    if (this.events) this.events.close();
    this.events = null;
    clearTimeout(this.timer);
    this.reportId = null;
  }

  async list() {
    this.close();
    const { suites, file_errors: problems = [] } = await call('GET', '/suites');
    const items = suites.map((suite) => this.item(suite));
    this.display(el('article', { class: 'suites-view', 'aria-label': 'Suites' },
      el('h2', {}, 'Suites'),
      problems.length ? el('div', { class: 'suite-file-errors', role: 'alert' },
        el('p', {}, `${problems.length} suite file${problems.length === 1 ? '' : 's'} could not be read (nothing else is affected):`),
        el('ul', {}, problems.map((p) => el('li', {}, el('code', {}, p.where), ` ${p.message}`)))) : null,
      items.length ? el('ul', { class: 'suite-list' }, items)
        : el('p', { class: 'hint empty' },
          'No suites yet: tick runs in the thread, then "Save as suite". A suite reruns them all against the code on disk.')));
  }

  // One suite in the list: Run, its last report, run on save (a PATCH as the box is
  // ticked), and Delete, which asks once in place (its reports go with it).
  item(suite) {
    const guarded = (work) => () => work().catch((e) => this.hooks.failed(e));
    const onSave = el('input', { type: 'checkbox', checked: suite.run_on_save,
      'aria-label': `Run ${suite.name} on each save`,
      onchange: (event) => {
        const box = event.target;
        box.disabled = true;
        call('PATCH', `/suites/${encodeURIComponent(suite.id)}`, { run_on_save: box.checked })
          .then((doc) => { box.checked = doc.run_on_save; })
          .catch((error) => { box.checked = !box.checked; this.hooks.failed(error); })
          .finally(() => { box.disabled = false; });
      } });
    const actions = el('span', { class: 'suite-actions' });
    const plain = () => {
      actions.replaceChildren();
      append(actions, [
        button('Run', guarded(() => this.run(suite)), { 'aria-label': `Run ${suite.name}` }),
        suite.last_suite_run_id ? button('Last report', guarded(() => this.report(suite.last_suite_run_id)),
          { 'aria-label': `Last report of ${suite.name}` }) : null,
        suite.last_suite_run_id ? button('Baseline…', guarded(() => choosing()),
          { 'aria-label': `Baseline of ${suite.name}` }) : null,
        button('Delete', () => asking(), { 'aria-label': `Delete ${suite.name}` })]);
    };
    // The baseline, chosen in place among the suite's finished runs (the current one named).
    const choosing = async () => {
      const [detail, listed] = await Promise.all([
        call('GET', `/suites/${encodeURIComponent(suite.id)}`),
        call('GET', `/suites/${encodeURIComponent(suite.id)}/runs`)]);
      const current = baselineOf(detail);
      const runs = listed.suite_runs.filter((r) => r.status === SUITE_RUN_STATUS.COMPLETED);
      const pick = el('select', { 'aria-label': `Baseline of ${suite.name}`, class: 'suite-baseline' },
        current ? null : el('option', { value: '', selected: true, disabled: true },
          'the saved runs (current)'),
        runs.map((r) => el('option', { value: r.id, selected: r.id === current },
          `suite run of ${r.created_at.slice(0, 16).replace('T', ' ')}${r.id === current ? ' (current)' : ''}`)));
      actions.replaceChildren(pick,
        button('Use as baseline', guarded(async () => {
          if (!pick.value) return;
          await call('PATCH', `/suites/${encodeURIComponent(suite.id)}`, { baseline_suite_run_id: pick.value });
          plain();
          actions.prepend(el('span', { class: 'hint baseline-now', role: 'status' },
            'Baseline set: the next runs compare with it.'));
        }), { 'aria-label': `Use as the baseline of ${suite.name}` }),
        button('Keep', () => { plain(); actions.querySelector('button').focus(); }));
      pick.focus();
    };
    const asking = () => {
      actions.replaceChildren(
        el('span', { class: 'confirm', role: 'status' }, `Delete "${suite.name}" and its reports?`),
        button('Yes, delete', guarded(async () => {
          await call('DELETE', `/suites/${encodeURIComponent(suite.id)}`);
          await this.list();
        }), { class: 'danger', 'aria-label': `Yes, delete ${suite.name}` }),
        button('Keep', () => { plain(); actions.querySelector('button').focus(); }));
      actions.querySelector('.danger').focus();
    };
    plain();
    return el('li', { class: 'suite-item', dataset: { suiteId: suite.id } },
      el('span', { class: 'suite-name' }, suite.name,
        suite.file_path ? el('code', { class: 'suite-file', title: 'kept in this file of the project: commit it, review its diff' },
          suite.file_path) : null),
      el('span', { class: 'hint' }, `${suite.case_count} case${suite.case_count === 1 ? '' : 's'}`,
        suite.repeat > 1 ? `, each run ${suite.repeat}×` : ''),
      el('label', { class: 'suite-on-save' }, onSave, 'run on save'),
      actions);
  }

  async run(suite) {
    const started = await call('POST', `/suites/${encodeURIComponent(suite.id)}/runs`);
    await this.report(started.suite_run_id);
  }

  // The report as far as the run got; while it runs, read again as its progress comes.
  async report(suiteRunId) {
    this.close();
    this.reportId = suiteRunId;
    const doc = await call('GET', `/suite-runs/${encodeURIComponent(suiteRunId)}`);
    if (this.reportId !== suiteRunId) return;
    this.display(this.reportView(doc));
    if (OVER.has(doc.status)) return;
    const events = new EventSource(`${API}/suite-runs/${encodeURIComponent(suiteRunId)}/events`);
    this.events = events;
    const reread = () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.refresh(suiteRunId), REREAD_MS);
    };
    events.addEventListener('suite.case', reread);
    events.addEventListener('suite.status', (event) => {
      const data = JSON.parse(event.data);
      if (OVER.has(data.status)) {
        events.close();
        if (this.events === events) this.events = null;
      }
      reread();
    });
  }

  async refresh(suiteRunId) {
    try {
      // The pane shows something else now (a run, Compare): the report stops following.
      if (!this.shown || !this.shown.isConnected) {
        this.close();
        return;
      }
      const doc = await call('GET', `/suite-runs/${encodeURIComponent(suiteRunId)}`);
      if (this.reportId === suiteRunId && this.shown.isConnected) this.display(this.reportView(doc));
    } catch (error) {
      this.hooks.failed(error);
    }
  }

  reportView(doc) {
    const s = doc.summary;
    const finished = s.done + s.skipped;
    const running = !OVER.has(doc.status);
    const moved = (s.statuses_moved || []).map((m) => `${m.before} → ${m.after}: ${m.count}`);
    const evaluators = (s.evaluators || []).map((e) => el('tr', {},
      el('th', { scope: 'row' }, e.evaluator),
      el('td', {}, `${mean(e.mean_before)} → ${mean(e.mean_after)}`),
      el('td', {}, String(e.pass_to_fail)), el('td', {}, String(e.fail_to_pass))));
    return el('article', { class: 'suite-report', 'aria-label': 'Suite report',
      dataset: { suiteRunId: doc.id, status: doc.status } },
    el('h2', {}, `Suite report: ${doc.suite_name || doc.suite_id}`),
    el('p', { class: 'facts' },
      el('span', { class: 'status', dataset: { status: doc.status } }, doc.status),
      doc.reason ? el('span', { class: 'reason' }, doc.reason) : null,
      el('span', { class: 'hint' }, doc.trigger === 'save' ? 'run on save' : 'run by hand')),
    el('div', { class: 'suite-progress' },
      el('progress', { max: s.cases, value: finished, 'aria-label': 'Cases finished' }),
      el('span', {}, `${finished} of ${s.cases} cases finished`,
        s.skipped ? ` (${s.skipped} skipped)` : '')),
    el('div', { class: 'actions' },
      running ? button('Cancel suite run', () => call('DELETE', `/suite-runs/${encodeURIComponent(doc.id)}`)
        .catch((e) => this.hooks.failed(e))) : null,
      !running && s.done ? this.baselineButton(doc) : null,
      button('All suites', () => this.list().catch((e) => this.hooks.failed(e)))),
    el('p', { class: 'suite-summary' },
      `${s.changed} of ${s.cases} cases changed · ${s.status_moved_cases} moved status`,
      moved.length ? ` (${moved.join(', ')})` : '',
      doc.repeat > 1 ? ` · ${s.flaky || 0} flaky · each case run ${doc.repeat}×` : ''),
    doc.repeat > 1 ? el('p', { class: 'hint suite-marks' },
      'flaky: a case\'s own runs disagree · changed: they agree, and not with the baseline') : null,
    evaluators.length ? el('table', { class: 'scores suite-evaluators' },
      el('caption', {}, 'Evaluators: mean score before → after'),
      el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'evaluator'), el('th', { scope: 'col' }, 'mean'),
        el('th', { scope: 'col' }, 'pass → fail'), el('th', { scope: 'col' }, 'fail → pass'))),
      el('tbody', {}, evaluators)) : null,
    // Focusable and named: a keyboard can scroll the table when it is wider than the pane.
    el('div', { class: 'table-scroll', tabindex: '0', role: 'region', 'aria-label': 'Cases, scrollable' },
      this.caseTable(doc.cases)),
    el('p', { class: 'hint run-id', title: [doc.code_fingerprint, ...(doc.baseline_fingerprints || [])]
      .filter(Boolean).join('\n') || null },
    `code ${short(doc.code_fingerprint) || 'not known yet'}`,
    (doc.baseline_fingerprints || []).length
      ? ` · baselines from ${doc.baseline_fingerprints.map(short).join(', ')}` : ''),
    el('p', { class: 'hint' }, 'Counts only: whether a change is a regression is yours to say.'));
  }

  // "Make these results the baselines": the next runs of the suite compare with this one's
  // results (cases it skipped keep theirs).
  baselineButton(doc) {
    const already = doc.cases.some((row) => row.state === 'done')
      && doc.cases.every((row) => row.state !== 'done' || (row.baseline || {}).suite_run_id === doc.id);
    if (already) return el('span', { class: 'hint baseline-now' }, 'These results are the baselines.');
    const press = button('Make these results the baselines', async () => {
      press.disabled = true;
      try {
        await call('PATCH', `/suites/${encodeURIComponent(doc.suite_id)}`, { baseline_suite_run_id: doc.id });
        press.replaceWith(el('span', { class: 'hint baseline-now', role: 'status' },
          'These results are the baselines: the next runs compare with them.'));
      } catch (error) {
        press.disabled = false;
        this.hooks.failed(error);
      }
    });
    return press;
  }

  caseTable(cases) {
    const repeated = cases.some((row) => (row.repeat || 1) > 1);
    // Seven columns, so the table fits the report's column at 1280 px: a case's result is its
    // mark once done and its state before; its changes are the answer's and the scores'.
    const head = ['#', 'case', 'result', 'status', repeated ? 'duration (median)' : 'duration',
      'changes', '']
      .map((name) => el('th', { scope: 'col' }, name));
    const rows = cases.map((row) => {
      const done = row.state === 'done';
      const base = row.baseline || {};
      const newest = row.run_ids[row.run_ids.length - 1];
      const status = !done ? '' : row.status_moved
        ? `${row.status_before || '–'} → ${row.status_after || '–'}` : `${row.status_after}, as before`;
      const state = row.state === 'skipped'
        ? `skipped${row.skipped_for ? ` (${row.skipped_for})` : ''}` : row.state;
      const many = (row.repeat || 1) > 1;
      const scores = many ? (row.score_spread || []).map((sc) => `${sc.evaluator} ${spread(sc)}`)
        : (row.scores || []).filter((sc) => sc.delta || sc.pass_before !== sc.pass_after)
          .map((sc) => `${sc.evaluator} ${signed(sc.delta)}${sc.pass_before !== sc.pass_after
            ? ` (${sc.pass_before} → ${sc.pass_after})` : ''}`);
      const share = typeof row.baseline_status_share === 'number'
        ? `${Math.round(row.baseline_status_share * 100)}%` : '–';
      const runs = many && done ? el('span', { class: 'hint case-repeat',
        title: `${share} of its ${row.repeat} runs ended with the baseline's status` },
      `${row.repeat} runs, ${share} as baseline`) : null;
      const data = (row.data_changes || []).length;
      const moves = [row.text_changed ? `${row.text_diff_lines} lines differ` : 'same',
        data ? `data ${data}` : '', row.files_changed ? `files ${row.files_changed}` : '']
        .filter(Boolean).join(', ');
      const duration = !many ? signed(row.duration_delta_ms, 'ms')
        : row.duration_spread ? ms(row.duration_spread.median) : '';
      const comparable = done && base.run_id && !base.deleted && newest;
      return el('tr', { class: 'case-row', dataset: { caseId: row.case_id, state: row.state,
        changed: row.changed ? 'true' : 'false', moved: row.status_moved ? 'true' : 'false',
        mark: done ? (row.mark || (row.changed ? 'changed' : 'same')) : '' } },
      el('td', {}, String(row.position + 1)),
      el('td', { class: 'case-name' }, caseName(row),
        base.deleted ? el('span', { class: 'hint' }, ' (baseline deleted)') : null),
      el('td', { class: 'case-result' }, done ? mark(row) : state, runs),
      el('td', { class: row.status_moved ? 'moved' : null }, done ? status : ''),
      el('td', {}, done ? duration : ''),
      el('td', { class: 'case-changes' }, done ? [
        el('span', {}, `answer: ${moves}`),
        scores.length ? scores.map((line) => el('span', {}, line)) : el('span', {}, 'scores: same')]
        : ''),
      el('td', {}, comparable ? button('Compare', () => this.hooks.compare(base.run_id, newest),
        { 'aria-label': `Compare case ${row.position + 1} with its baseline` }) : null));
    });
    return el('table', { class: 'scores suite-cases' }, el('caption', {}, 'Cases: baseline → this run'),
      el('thead', {}, el('tr', {}, head)), el('tbody', {}, rows));
  }
}
