// One run as a turn of the session's conversation: where it came from (the question a
// resume answered, the run a rerun repeats and which fields an edit changed), what was sent
// in whole (text as typed, a data part's summary, files by name) and the agent's answer in
// whole, its Markdown formatted (markdown.js). A long input or answer is folded to a few
// lines with "Show all"; what a reader unfolded stays unfolded while the page lives.
import { ACTIVE } from './api.js';
import { button, el, ms } from './dom.js';
import { renderMarkdown } from './markdown.js';
import { STATUS } from './wire.js';

const EXCERPT = 160;     // characters: a run's name in one line
const FOLD_CHARS = 600;  // a text longer than this (or of more lines) is folded
const FOLD_LINES = 8;
const FOLDED_TEXT = 1000;  // characters of a folded answer formatted: more is out of sight
const FORMATTED_KEPT = 200;  // turns' formatted answers kept (a few screens' worth)

const formattedKept = new Map();  // "<run id>:<part>:<folded|whole>" -> {text, node}
const unfolded = new Set();  // "<run id>:<input|answer>" the reader unfolded
let connectionLost = false;  // while lost, an active run's state is not known

// While the connection is lost, a turn of an active run says its state is unknown, never its
// last value (the run view and the Host badge say the same).
export function setConnectionLost(lost) {
  connectionLost = lost;
}

export function excerpt(text, length = EXCERPT) {
  const flat = String(text || '').replace(/\s+/g, ' ').trim();
  return flat.length > length ? `${flat.slice(0, length - 1)}…` : flat;
}

// Parts in one line: text as it is, a data part as its schema (or keys), files by name.
export function summary(parts) {
  return (parts || []).map((part) => {
    if (part.kind === 'text') return part.text;
    if (part.kind === 'data') return dataSummary(part);
    if (part.kind === 'file') return `file: ${part.name || part.uri || 'file'}`;
    if (part.kind === 'error') return `error: ${part.message || ''}`;
    return part.kind || '';
  }).filter(Boolean).join(' · ');
}

function dataSummary(part) {
  const data = part.data || {};
  const keys = Object.keys(data).filter((k) => k !== 'schema').slice(0, 4).join(', ');
  return `{${data.schema ? `${data.schema}: ` : ''}${keys}}`;
}

// A run's name for another run's line: its label, else its input.
export function runName(run) {
  if (!run) return '';
  return run.label || excerpt(summary(run.input && run.input.parts), 48) || run.id;
}

// When a run was made: its time today, its date and time before.
export function turnWhen(run) {
  const created = run.created_at || '';
  const today = new Date().toISOString().slice(0, 10);
  return created.startsWith(today) ? created.slice(11, 19) : created.slice(0, 16).replace('T', ' ');
}

function line(cls, text, prefix) {
  const whole = excerpt(text, 2000);
  return el('span', { class: `turn-line ${cls}`, title: whole || null },
    prefix ? el('span', { class: 'turn-prefix' }, prefix) : null, excerpt(text) || '—');
}

// A paper clip drawn in SVG (no emoji font is needed): a file part's mark.
function clip() {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 16 16');
  svg.setAttribute('class', 'clip');
  svg.setAttribute('aria-hidden', 'true');
  const path = document.createElementNS(ns, 'path');
  path.setAttribute('d', 'M10.5 4.5 5.8 9.2a1.3 1.3 0 0 0 1.9 1.9l5-5a2.6 2.6 0 0 0-3.7-3.7l-5 5a3.9 3.9 0 0 0 5.5 5.5l4.2-4.2');
  svg.append(path);
  return svg;
}

// What was sent, whole: text as typed, data and files as a line each.
function inputParts(parts) {
  return (parts || []).map((part) => {
    if (part.kind === 'text') return el('span', { class: 'turn-text' }, part.text);
    if (part.kind === 'data') return el('span', { class: 'turn-data' }, dataSummary(part));
    if (part.kind === 'file') {
      return el('span', { class: 'turn-file' }, clip(), part.name || part.uri || 'file');
    }
    return el('span', {}, summary([part]));
  });
}

function answerParts(run, folded) {
  const parts = run.output || [];
  if (!parts.length) {
    if (ACTIVE.has(run.status)) return [el('span', { class: 'hint' }, '…')];
    return [el('span', { class: 'hint' }, '—')];
  }
  return parts.map((part, index) => {
    if (part.kind !== 'text') return el('span', { class: 'turn-data' }, summary([part]));
    const text = folded && part.text.length > FOLDED_TEXT ? `${part.text.slice(0, FOLDED_TEXT)}…` : part.text;
    return formatted(`${run.id}:${index}:${folded ? 'folded' : 'whole'}`, text);
  });
}

// A turn's formatted answer, kept for when it scrolls back into view (formatting a long
// answer again on every draw is what made scrolling a long thread slow). A node still
// drawn elsewhere (a turn drawn again in place) is copied; at most FORMATTED_KEPT are kept.
function formatted(key, text) {
  const kept = formattedKept.get(key);
  if (kept && kept.text === text) {
    formattedKept.delete(key);  // the newest use last: the oldest go first
    formattedKept.set(key, kept);
    return kept.node.isConnected ? kept.node.cloneNode(true) : kept.node;
  }
  const node = el('div', { class: 'markdown' }, renderMarkdown(text));
  formattedKept.delete(key);
  formattedKept.set(key, { text, node });
  if (formattedKept.size > FORMATTED_KEPT) formattedKept.delete(formattedKept.keys().next().value);
  return node;
}

function long(text) {
  return text.length > FOLD_CHARS || text.split('\n').length > FOLD_LINES;
}

// One side of the turn ("you:" or "agent:"), folded when long, with its "Show all".
function side(run, which, prefix, build, text, changed) {
  const key = `${run.id}:${which}`;
  const foldable = long(text);
  const folded = foldable && !unfolded.has(key);
  const body = el('div', { class: `turn-body${folded ? ' folded' : ''}` }, build(folded));
  const box = el('div', { class: `turn-side turn-${which}` }, el('span', { class: 'turn-prefix' }, prefix), body);
  if (!foldable) return box;
  const toggle = button(folded ? 'Show all' : 'Show less', () => {
    if (unfolded.has(key)) unfolded.delete(key);
    else unfolded.add(key);
    changed();
  }, { class: 'show-all', 'aria-expanded': String(!folded) });
  return [box, toggle];
}

// `find(id)`: a run of the loaded list (a resume's parent, a rerun's source) or undefined;
// `open()` opens the run; `changed()` after a fold or unfold (the turn is drawn again).
export function turnLines(run, find, open = null, changed = () => {}) {
  const created = run.created_at || '';
  let origin = null;
  if (run.parent_run_id) {
    const parent = find(run.parent_run_id);
    const asked = parent ? summary(parent.output) : '';
    origin = line('turn-origin', asked || run.parent_run_id, '↳ answers: ');
  } else if (run.rerun_of) {
    const source = find(run.rerun_of);
    const edited = (run.edited_fields || []).length ? ` · edited: ${run.edited_fields.join(', ')}` : '';
    origin = line('turn-origin', `${source ? runName(source) : run.rerun_of}${edited}`, '↻ rerun of ');
  }
  const when = turnWhen(run);
  const opener = open ? button(when, open, { class: 'turn-open', title: created || null,
    'aria-label': `Open the run "${runName(run)}", ${when}` })
    : el('span', { class: 'when', title: created || null }, when);
  const input = (run.input && run.input.parts) || [];
  const inputText = summary(input);
  const answerText = summary(run.output);
  const waiting = run.status === STATUS.INPUT_REQUIRED && !run.resumed_by
    ? el('span', { class: 'waiting' }, 'waiting for your answer') : null;
  return [
    el('div', { class: 'turn-line turn-top' }, opener, origin),
    side(run, 'input', 'you: ', () => inputParts(input), inputText, changed),
    side(run, 'answer', 'agent: ', (folded) => answerParts(run, folded), answerText, changed),
    el('div', { class: 'turn-line facts' },
      connectionLost && ACTIVE.has(run.status)
        ? el('span', { class: 'status', dataset: { status: 'unknown' } }, 'unknown (connection lost)')
        : el('span', { class: 'status', dataset: { status: run.status } }, run.status),
      waiting,
      run.reason ? el('span', { class: 'reason' }, run.reason) : null,
      run.duration_ms !== null && run.duration_ms !== undefined
        ? el('span', { class: 'duration' }, ms(run.duration_ms)) : null,
      run.label ? el('span', { class: 'label' }, run.label) : null,
      run.score_summary && run.score_summary.evaluators ? el('span', { class: 'badge' },
        `evaluator ${run.score_summary.evaluators} · fail ${run.score_summary.failed}`) : null),
  ];
}
