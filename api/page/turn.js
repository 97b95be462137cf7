// One run as a turn of the session's conversation: what was sent (text, a data part's
// summary, file names), an excerpt of the answer, and where it came from (the question a
// resume answered, the run a rerun repeats and which fields an edit changed). One fixed
// height (the run list places turns by index), every line cut with an ellipsis and whole
// in the title.
import { el, ms } from './dom.js';

const EXCERPT = 160;  // characters: more never shows in one line of the thread

export function excerpt(text, length = EXCERPT) {
  const flat = String(text || '').replace(/\s+/g, ' ').trim();
  return flat.length > length ? `${flat.slice(0, length - 1)}…` : flat;
}

// Parts in one line: text as it is, a data part as its schema (or keys), files by name.
export function summary(parts) {
  return (parts || []).map((part) => {
    if (part.kind === 'text') return part.text;
    if (part.kind === 'data') {
      const data = part.data || {};
      const keys = Object.keys(data).filter((k) => k !== 'schema').slice(0, 4).join(', ');
      return `{${data.schema ? `${data.schema}: ` : ''}${keys}}`;
    }
    if (part.kind === 'file') return `📎 ${part.name || part.uri || 'file'}`;
    if (part.kind === 'error') return `error: ${part.message || ''}`;
    return part.kind || '';
  }).filter(Boolean).join(' · ');
}

// A run's name for another run's line: its label, else its input.
export function runName(run) {
  if (!run) return '';
  return run.label || excerpt(summary(run.input && run.input.parts), 48) || run.id;
}

function line(cls, text, prefix) {
  const whole = excerpt(text, 2000);
  return el('span', { class: `turn-line ${cls}`, title: whole || null },
    prefix ? el('span', { class: 'turn-prefix' }, prefix) : null, excerpt(text) || '—');
}

// `find(id)`: a run of the loaded list (a resume's parent, a rerun's source) or undefined.
export function turnLines(run, find) {
  // A turn of today shows its time; an older one its date too.
  const created = run.created_at || '';
  const today = new Date().toISOString().slice(0, 10);
  const when = created.startsWith(today) ? created.slice(11, 19) : created.slice(0, 16).replace('T', ' ');
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
  const answer = summary(run.output);
  return [
    el('span', { class: 'turn-line turn-top' }, el('span', { class: 'when', title: created || null }, when),
      origin),
    line('turn-input', summary(run.input && run.input.parts), 'you: '),
    line('turn-answer', answer || (run.status === 'running' ? '…' : ''), 'agent: '),
    el('span', { class: 'turn-line facts' },
      el('span', { class: 'status', dataset: { status: run.status } }, run.status),
      run.reason ? el('span', { class: 'reason' }, run.reason) : null,
      run.duration_ms !== null && run.duration_ms !== undefined
        ? el('span', { class: 'duration' }, ms(run.duration_ms)) : null,
      run.label ? el('span', { class: 'label' }, run.label) : null,
      run.score_summary && run.score_summary.evaluators ? el('span', { class: 'badge' },
        `evaluator ${run.score_summary.evaluators} · fail ${run.score_summary.failed}`) : null),
  ];
}
