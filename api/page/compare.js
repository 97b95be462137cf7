// Two runs side by side, as `/compare` gives them: status, duration delta, the text diff,
// JSON changes, files and a score table. No verdict of our own.
import { call } from './api.js';
import { el, ms } from './dom.js';

export async function compareView(left, right) {
  const doc = await call('GET', `/compare?left=${encodeURIComponent(left)}&right=${encodeURIComponent(right)}`);
  const side = (s) => el('div', { class: 'side' },
    el('h3', {}, s.label || s.run_id), el('p', {}, `${s.status}${s.reason ? ` (${s.reason})` : ''} · ${ms(s.duration_ms)}`));
  const delta = typeof doc.duration_delta_ms === 'number'
    ? `duration ${doc.duration_delta_ms >= 0 ? '+' : ''}${ms(doc.duration_delta_ms)}` : 'duration: n/a';
  const code = doc.same_code === null ? 'code: unknown' : doc.same_code ? 'same code' : 'different code';
  const rows = (doc.scores || []).map((s) => el('tr', {},
    el('td', {}, `${s.evaluator}${s.node ? ` · ${s.node}` : ''}`),
    el('td', {}, fmt(s.left, s.left_pass_status)), el('td', {}, fmt(s.right, s.right_pass_status)),
    el('td', {}, s.delta === null ? '' : String(s.delta))));
  const changes = ((doc.data && doc.data.changes) || []).map((c) => el('li', {},
    `part ${c.part} ${c.path || '/'} ${c.op}: ${JSON.stringify(c.left)} → ${JSON.stringify(c.right)}`));
  const files = (doc.files || []).map((f) => el('li', {},
    `file ${f.index}: ${f.changed && f.changed.length ? `changed ${f.changed.join(', ')}` : 'same metadata'}`
    + `, content ${f.same_content === null ? 'unknown' : f.same_content ? 'same' : 'differs'}`));
  return el('article', { class: 'compare-view', 'aria-label': 'Compare' },
    el('h2', {}, 'Compare'),
    el('div', { class: 'sides' }, side(doc.left), side(doc.right)),
    el('p', { class: 'facts' }, delta, ' · ', code),
    el('h3', {}, doc.text.same ? 'Text: the same' : 'Text'),
    doc.text.same ? null : el('pre', { class: 'diff' }, doc.text.unified_diff),
    changes.length ? el('h3', {}, 'Data changes') : null,
    changes.length ? el('ul', {}, changes) : null,
    files.length ? el('ul', {}, files) : null,
    rows.length ? el('table', { class: 'scores' },
      el('thead', {}, el('tr', {}, ['evaluator', 'left', 'right', 'delta'].map((h) => el('th', {}, h)))),
      el('tbody', {}, rows)) : null);
}

function fmt(score, status) {
  if (score === null || score === undefined) return '—';
  return status ? `${score} (${status})` : String(score);
}
