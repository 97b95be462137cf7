// Two runs side by side, as `/compare` gives them, the older on the left: each named by its
// label or its input and its time; the text diff coloured with its +/- markers kept as text
// (colour is never the only sign); the data parts' JSON changes; the file parts' name, size
// and hash changes; the score table with deltas. No verdict of our own.
import { call } from './api.js';
import { el, ms } from './dom.js';
import { excerpt } from './turn.js';

const OP_MARK = { add: '+', remove: '−', replace: '~' };

// `runs`: the two run ids; `created`: id -> created_at when known (the older goes left).
export async function compareView(runs, created = {}) {
  const [left, right] = [...runs].sort((a, b) => String(created[a] || '').localeCompare(String(created[b] || '')));
  const doc = await call('GET', `/compare?left=${encodeURIComponent(left)}&right=${encodeURIComponent(right)}`);
  const inputs = (doc.input && doc.input.text) || {};
  const name = (s, input) => s.label || excerpt(input, 60) || s.run_id;
  const names = { left: name(doc.left, inputs.left), right: name(doc.right, inputs.right) };
  const side = (s, which) => el('div', { class: `side side-${which}` },
    el('h3', {}, `${which === 'left' ? 'older' : 'newer'}: ${names[which]}`),
    el('p', { class: 'when' }, (s.created_at || '').replace('T', ' ').slice(0, 19), el('br'),
      el('code', { class: 'run-id' }, s.run_id)),
    el('p', {}, `${s.status}${s.reason ? ` (${s.reason})` : ''} · ${ms(s.duration_ms)}`));
  const delta = typeof doc.duration_delta_ms === 'number'
    ? `duration ${doc.duration_delta_ms >= 0 ? '+' : ''}${ms(doc.duration_delta_ms)}` : 'duration: n/a';
  const code = doc.same_code === null ? 'code: unknown' : doc.same_code ? 'same code' : 'different code';
  const rows = (doc.scores || []).map((s) => el('tr', {},
    el('td', {}, `${s.evaluator}${s.node ? ` · ${s.node}` : ''}`),
    el('td', {}, fmt(s.left, s.left_pass_status)), el('td', {}, fmt(s.right, s.right_pass_status)),
    el('td', { dataset: { sign: sign(s.delta) } }, s.delta === null ? '' : `${s.delta > 0 ? '+' : ''}${s.delta}`)));
  const changes = ((doc.data && doc.data.changes) || []).map((c) => el('li', { class: `change ${c.op}` },
    el('span', { class: 'mark' }, `${OP_MARK[c.op] || c.op} `),
    `part ${c.part} ${c.path || '/'} ${c.op}: `,
    c.op === 'add' ? json(c.right) : c.op === 'remove' ? json(c.left) : `${json(c.left)} → ${json(c.right)}`));
  const files = (doc.files || []).map(fileLine);
  return el('article', { class: 'compare-view', 'aria-label': 'Compare' },
    el('h2', {}, 'Compare'),
    el('div', { class: 'sides' }, side(doc.left, 'left'), side(doc.right, 'right')),
    el('p', { class: 'facts' }, delta, ' · ', code),
    el('h3', {}, doc.text.same ? 'Answer text: the same' : 'Answer text'),
    doc.text.same ? null : diffView(doc.text.unified_diff, names),
    changes.length ? el('h3', {}, 'Data changes') : null,
    changes.length ? el('ul', { class: 'changes' }, changes) : null,
    files.length ? el('h3', {}, 'Files') : null,
    files.length ? el('ul', { class: 'changes' }, files) : null,
    rows.length ? el('h3', {}, 'Scores') : null,
    rows.length ? el('table', { class: 'scores' },
      el('thead', {}, el('tr', {}, ['evaluator', 'older', 'newer', 'delta'].map((h) => el('th', {}, h)))),
      el('tbody', {}, rows)) : null);
}

// One line a row, its kind a class (the colour) and its first character kept (the sign).
function diffView(unified, names) {
  const lines = String(unified || '').split('\n');
  return el('pre', { class: 'diff', role: 'region', tabindex: 0, 'aria-label': 'Text diff' }, lines.map((line) => {
    let kind = 'same';
    let text = line;
    if (line.startsWith('--- ')) { kind = 'head'; text = `--- older: ${names.left}`; }
    else if (line.startsWith('+++ ')) { kind = 'head'; text = `+++ newer: ${names.right}`; }
    else if (line.startsWith('@@')) kind = 'hunk';
    else if (line.startsWith('+')) kind = 'add';
    else if (line.startsWith('-')) kind = 'del';
    return el('span', { class: `diff-line ${kind}` }, `${text}\n`);
  }));
}

function fileLine(f) {
  const facts = (side) => side ? `${side.name || side.uri || 'file'} (${side.size ?? '?'} bytes`
    + `${side.sha256 ? `, sha256 ${side.sha256.slice(0, 12)}…` : ''})` : 'none';
  const changed = f.changed && f.changed.length ? `changed ${f.changed.join(', ')}` : 'same metadata';
  const content = f.same_content === null ? 'unknown' : f.same_content ? 'same' : 'differs';
  return el('li', { class: `change ${f.changed && f.changed.length ? 'replace' : 'same'}` },
    el('span', { class: 'mark' }, f.changed && f.changed.length ? '~ ' : '= '),
    `file ${f.index}: ${changed}, content ${content}: ${facts(f.left)} → ${facts(f.right)}`);
}

function json(value) {
  return value === undefined ? '' : JSON.stringify(value);
}

function sign(delta) {
  if (typeof delta !== 'number' || delta === 0) return 'zero';
  return delta > 0 ? 'up' : 'down';
}

function fmt(score, status) {
  if (score === null || score === undefined) return '—';
  return status ? `${score} (${status})` : String(score);
}
