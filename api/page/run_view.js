// One run: header, stepper, the answer (streamed, then the stored final parts), actions and
// a failed run's diagnostics. One EventSource per visible run; the browser resumes it by
// Last-Event-ID, and the stream ends (204) once the run's final status was sent.
import { ACTIVE, API, TERMINAL, call } from './api.js';
import { button, el, ms } from './dom.js';
import { renderAnswerPart, renderPart } from './parts.js';
import { sourceTarget } from './source.js';
import { GraphView } from './graph.js';
import { Stepper } from './stepper.js';
import { StreamedAnswer } from './stream_text.js';
import { Trace } from './trace.js';
import { runName } from './turn.js';
import { LIMITS, RUN_EVENT, STATUS } from './wire.js';

const LOG_TAIL_LINES = 20;
const RETRY_MS = 2000;
// A log line is stamped when the daemon reads it, a little after the Host wrote it: the
// window ends this long after the run (and never starts before it).
const WINDOW_SLACK_S = 1;

export class RunView {
  constructor(runId, app) {
    this.runId = runId;
    this.app = app;  // start(request), openRun(id), notice(text), fail(error), runsChanged(), showLogs(), editRerun(run)
    this.stepper = new Stepper();
    this.head = el('div', { class: 'run-head' });
    this.input = el('div', { class: 'input-parts' });
    this.answer = el('div', { class: 'answer', role: 'region', 'aria-label': 'Answer', tabindex: 0, dataset: { source: 'none' } });
    this.actions = el('div', { class: 'actions' });
    this.diagnostics = el('div', { class: 'diagnostics' });
    this.snippet = el('pre', { class: 'snippet', hidden: true });
    this.scores = el('div', { class: 'scores-box' });
    // A Flow's graph, coloured by this run's path; a node opens its bar in the trace.
    const graph = app.composer && app.composer.graph;
    this.graph = graph ? new GraphView(graph, (name) => this.showNode(name)) : null;
    this.trace = new Trace({ sources: Boolean(this.graph) });
    const details = el('details', { class: 'trace-box' },
      el('summary', {}, 'Trace and scores'), this.scores, this.trace.node);
    this.traceBox = details;
    const graphBox = this.graph ? el('details', { class: 'graph-box', open: true },
      el('summary', {}, 'Graph'), el('div', { class: 'graph-scroll' }, this.graph.node)) : null;
    this.graphBox = graphBox;
    this.node = el('article', { class: 'run-view', dataset: { runId, status: '' } },
      this.head, el('details', { class: 'input-box' }, el('summary', {}, 'Input'), this.input),
      this.stepper.node, this.answer, this.actions, this.snippet, this.diagnostics,
      graphBox, details);
    this.stream = new StreamedAnswer(this.answer);
    this.final = false;
    this.events = null;
    this.cursor = null;  // the last event id seen
    this.ended = false;
    this.detail = null;
    this.labelDraft = null;  // the label being typed, not sent yet
  }

  async open() {
    await this.refresh();
    if (this.events === null && !this.closed) this.connect();
  }

  connect() {
    // The browser resumes a dropped stream itself (Last-Event-ID). A stream it gave up on
    // (a 503 while no front or daemon answered) is opened again here, after the cursor.
    const after = this.cursor ? `?after=${encodeURIComponent(this.cursor)}` : '';
    const events = new EventSource(`${API}/runs/${encodeURIComponent(this.runId)}/events${after}`);
    this.events = events;
    const on = (kind, handler) => events.addEventListener(kind, (e) => {
      if (e.lastEventId) this.cursor = e.lastEventId;
      handler(JSON.parse(e.data));
    });
    events.addEventListener('error', () => {
      if (events.readyState !== EventSource.CLOSED || this.events !== events) return;
      this.events = null;
      this.retry = setTimeout(() => {
        if (!this.closed && !this.ended) this.connect();
      }, RETRY_MS);
    });
    on(RUN_EVENT.PHASE, (d) => this.stepper.update(d));
    on(RUN_EVENT.OUTPUT_DELTA, (d) => this.delta(d));
    on(RUN_EVENT.OUTPUT, (d) => this.showFinal(d.parts || []));
    on(RUN_EVENT.TRACE, (d) => {
      this.trace.add(d);
      if (this.graph) this.graph.add(d);
    });
    on(RUN_EVENT.STATUS, (d) => {
      this.setStatus(d.status);
      if (TERMINAL.has(d.status)) {
        this.ended = true;
        this.stepper.end(d.status, d.reason);
        if (this.graph) this.graph.end(d.status);
        this.disconnect();
        if (!this.detail || !TERMINAL.has(this.detail.status)) {  // it ended while we watched
          this.refresh();
          this.app.runsChanged(this.runId);
        }
      }
    });
  }

  // From the graph: the node's bar in the trace, opened and focused.
  showNode(name) {
    this.traceBox.open = true;
    const bar = [...this.trace.node.querySelectorAll('.bar')].find((b) => b.dataset.node === name);
    if (!bar) {
      this.app.notice(`${name} did not run in this run.`);
      return;
    }
    bar.scrollIntoView({ block: 'nearest' });
    bar.focus();
    // And back: Escape on the bar returns to the node in the graph.
    const back = (event) => {
      if (event.key !== 'Escape') return;
      event.preventDefault();
      bar.removeEventListener('keydown', back);
      const node = this.graph.node.querySelector(`[data-node="${CSS.escape(name)}"]`);
      node.scrollIntoView({ block: 'nearest' });
      node.focus();
    };
    bar.addEventListener('keydown', back);
  }

  // A score that names a node leads to that node's source (as the trace's rows do) and,
  // for a Flow, to the node in the graph.
  whereIs(node) {
    // Source targets are a Flow's (its graph read from source): an Agent's node has none,
    // so it is offered no "Where is" that could only fail.
    if (!this.graph) return [el('span', { class: 'node-name' }, node)];
    const where = button(`Where is ${node}?`, async () => where.replaceWith(await sourceTarget(node)),
      { class: 'where' });
    const inGraph = this.graph && this.graph.has(node)
      ? button(`Show ${node} in the graph`, () => this.showInGraph(node), { class: 'where' }) : null;
    return [el('span', { class: 'node-name' }, node), ' ', where, inGraph ? ' ' : null, inGraph];
  }

  // The Graph opened, the node scrolled into view, marked and focused.
  showInGraph(node) {
    this.graphBox.open = true;
    this.graph.focusNode(node);
  }

  disconnect() {
    if (this.events) this.events.close();
    this.events = null;
  }

  close() {
    this.closed = true;
    clearTimeout(this.retry);
    this.disconnect();
    this.stream.stop();
    this.trace.close();
  }

  delta(d) {
    if (!this.final) this.stream.delta(d);
  }

  // The stored parts replace whatever streamed, once: the text never shows twice.
  showFinal(parts) {
    this.final = true;
    this.stream.stop();
    this.answer.replaceChildren(...parts.map(renderAnswerPart));
    this.answer.dataset.source = 'final';
  }

  renderScores(run) {
    const scores = run.scores || [];
    if (!scores.length) {
      this.scores.replaceChildren(el('p', { class: 'hint' }, 'No evaluator scores.'));
      return;
    }
    this.scores.replaceChildren(el('table', { class: 'scores' },
      el('thead', {}, el('tr', {}, ['evaluator', 'score', 'passStatus', 'reason', 'node', 'duration']
        .map((h) => el('th', {}, h)))),
      el('tbody', {}, scores.map((s) => el('tr', {},
        [s.evaluator, s.score, s.passStatus, s.reason].map(cell),
        el('td', { class: 'score-node' }, s.node ? this.whereIs(s.node) : ''),
        cell(ms(s.duration_ms)))))));
  }

  async copySnippet(kind) {
    const doc = await call('GET', `/runs/${encodeURIComponent(this.runId)}/snippets`);
    this.snippet.textContent = doc[kind];
    this.snippet.hidden = false;
    this.snippet.dataset.kind = kind;
    try {
      await navigator.clipboard.writeText(doc[kind]);
      this.app.notice(`Copied the ${kind === 'curl' ? 'curl command' : 'Python script'}.`);
    } catch {
      this.app.notice('The clipboard refused; the snippet is shown below the actions.');
    }
  }

  setStatus(status) {
    this.node.dataset.status = status;
    if (this.statusNode && !this.node.dataset.stale) this.statusNode.textContent = status;
  }

  // While the connection is lost the run's state is not known: it is not shown as its last
  // value. Back on line, the run is read again (its stream reopens by itself).
  connectionLost() {
    if (this.ended) return;
    this.node.dataset.stale = 'true';
    if (this.statusNode) this.statusNode.textContent = 'unknown (connection lost)';
  }

  connectionBack() {
    if (!this.node.dataset.stale) return;
    delete this.node.dataset.stale;
    this.setStatus(this.node.dataset.status);
    if (!this.ended) this.refresh();
  }

  async refresh() {
    let run;
    try {
      run = await call('GET', `/runs/${encodeURIComponent(this.runId)}`);
    } catch (error) {
      this.app.fail(error);
      return;
    }
    if (this.closed) return;
    this.detail = run;
    this.trace.setRun(run);
    this.renderHead(run);
    this.input.replaceChildren(...((run.input && run.input.parts) || []).map((p) => renderPart(p)));
    this.setStatus(run.status);
    this.renderActions(run);
    this.renderScores(run);
    if (TERMINAL.has(run.status)) {
      this.stepper.end(run.status, run.reason);
      if (!this.final) this.showFinal(run.output || []);  // run.output may have shown them
      this.renderDiagnostics(run);
    }
  }

  renderHead(run) {
    this.statusNode = el('span', { class: 'status', dataset: { status: run.status } },
      this.node.dataset.stale ? 'unknown (connection lost)' : run.status);
    const summary = run.score_summary && run.score_summary.evaluators
      ? el('span', { class: 'badge' },
        `evaluator ${run.score_summary.evaluators} · fail ${run.score_summary.failed}`)
      : null;
    this.head.replaceChildren(
      // Named as the thread names it (its label, else what was sent); the id below it.
      el('h2', {}, runName(run)),
      el('p', { class: 'run-id' }, run.id),
      el('p', { class: 'facts' }, this.statusNode,
        run.reason ? el('span', { class: 'reason' }, run.reason) : null,
        run.duration_ms !== null ? el('span', { class: 'duration' }, ms(run.duration_ms)) : null,
        summary,
        run.rerun_of ? el('span', {}, `rerun of ${run.rerun_of}`) : null,
        (run.edited_fields || []).length
          ? el('span', { class: 'edited' }, `edited: ${run.edited_fields.join(', ')}`) : null,
        run.parent_run_id ? el('span', {}, `resumes ${run.parent_run_id}`) : null));
  }

  renderActions(run) {
    const id = encodeURIComponent(run.id);
    const items = [];
    if (ACTIVE.has(run.status)) {
      items.push(button('Cancel', () => this.act(() => call('DELETE', `/runs/${id}`))));
    }
    if (run.status === STATUS.INPUT_REQUIRED && !run.resumed_by) {
      const answer = el('input', { 'aria-label': 'Your answer', class: 'answer-input' });
      const resume = () => this.act(() => this.app.start(() => call('POST',
        `/runs/${id}/resume`, { parts: [{ kind: 'text', text: answer.value }] })));
      onEnter(answer, resume);
      items.push(el('div', { class: 'resume' },
        el('p', { class: 'question' }, question(run)), answer, button('Resume', resume)));
    }
    if (!ACTIVE.has(run.status)) {
      items.push(button('Rerun', () => this.act(() => this.app.start(() => call('POST',
        `/runs/${id}/rerun`, {})))), button('Edit and rerun', () => this.app.editRerun(run)));
    }
    // What the person typed survives a redraw (the run ending while they type).
    const label = el('input', { 'aria-label': 'Run label', maxlength: LIMITS.MAX_LABEL, placeholder: 'a label for this run',
      oninput: () => { this.labelDraft = label.value; } });
    label.value = this.labelDraft ?? (run.label || '');
    const save = () => this.act(async () => {
      await call('PATCH', `/runs/${id}`, { label: label.value || null });
      this.labelDraft = null;
      await this.refresh();
      this.app.runsChanged(this.runId);
    });
    onEnter(label, save);
    items.push(label, button('Label', save),
    button('Copy curl', () => this.act(() => this.copySnippet('curl'))),
    button('Copy Python', () => this.act(() => this.copySnippet('python'))));
    this.actions.replaceChildren(...items);
  }

  async act(action) {
    try {
      await action();
    } catch (error) {
      this.app.fail(error);
    }
  }

  async renderDiagnostics(run) {
    if (!run.error && run.status !== STATUS.FAILED && run.status !== STATUS.INTERRUPTED) {
      this.diagnostics.replaceChildren();
      return;
    }
    const error = run.error || {};
    const box = el('section', { class: 'failure', 'aria-label': 'Diagnostics' },
      el('h3', {}, `${run.status}: ${run.reason || 'unknown reason'}`),
      el('p', { class: 'message' }, error.message || ''));
    if (run.recommended_run_command) {
      const command = run.recommended_run_command;
      box.append(el('p', {}, 'Run the Host by hand to see why: ', el('code', {}, command),
        button('Copy command', () => navigator.clipboard.writeText(command))));
    }
    const tail = Array.isArray(error.log_tail) ? error.log_tail : await hostLogTail(run);
    const which = run.generation ? `generation ${run.generation}, ` : '';
    box.append(el('h4', {}, `Host log tail (${which}during the run)`),
      tail.length ? el('pre', { class: 'log-tail', role: 'region', tabindex: 0, 'aria-label': 'Host log tail' }, tail.join('\n'))
        : el('p', { class: 'hint log-tail-empty' }, 'The Host wrote nothing during this run.'),
      button('Host logs', () => this.app.showLogs()));
    if (!this.closed) this.diagnostics.replaceChildren(box);
  }
}

function cell(v) {
  return el('td', {}, v === undefined || v === null ? '' : String(v));
}


function question(run) {
  const texts = (run.output || []).filter((p) => p.kind === 'text').map((p) => p.text);
  return texts.length ? texts.join('\n') : 'The agent asks for input.';
}

function onEnter(input, action) {
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.isComposing) {
      event.preventDefault();
      action();
    }
  });
}

// A run stored without its own tail (an agent's error, a run ended by a daemon restart):
// the kept `/host/logs` lines of the run's generation inside the run's time window, never
// another run's lines. `/host/logs` pages forward from an offset, read page by page (the
// ring is bounded).
async function hostLogTail(run) {
  const from = Date.parse(run.created_at) / 1000;
  const to = run.ended_at ? Date.parse(run.ended_at) / 1000 + WINDOW_SLACK_S : Infinity;
  const own = (line) => (!run.generation || line.generation === run.generation)
    && line.time >= from && line.time <= to;
  let tail = [];
  let after = 0;
  try {
    for (let page = 0; page < 20; page += 1) {
      const doc = await call('GET', `/host/logs?after=${after}&limit=5000`);
      tail = tail.concat(doc.lines.filter(own).map((line) => `[${line.stream}] ${line.text}`))
        .slice(-LOG_TAIL_LINES);
      if (doc.lines.length < 5000) break;
      after = doc.next;
    }
  } catch {
    // no tail is better than a broken diagnostics box
  }
  return tail;
}
