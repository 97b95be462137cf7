// Stored parts as DOM: text, data (a collapsible JSON tree), files, status and error parts.
// Everything the agent sent is text content, or, for an answer's text, Markdown built into
// elements by markdown.js (never parsed as HTML); a file link is built only from a sha256.
import { API } from './api.js';
import { el } from './dom.js';
import { renderMarkdown } from './markdown.js';

const SHA256 = /^[0-9a-f]{64}$/;

// `markdown`: an agent's text is shown formatted; what a person sent is shown as typed.
export function renderPart(part, { markdown = false } = {}) {
  switch (part.kind) {
    case 'text':
      if (part.truncated) return renderCutText(part);
      return markdown ? el('div', { class: 'part text markdown' }, renderMarkdown(part.text))
        : el('div', { class: 'part text' }, part.text);
    case 'data':
      return el('details', { class: 'part data', open: true },
        el('summary', {}, `data${part.data && part.data.schema ? ` · ${part.data.schema}` : ''}`),
        el('pre', {}, JSON.stringify(part.data, null, 2)));
    case 'file':
      return renderFile(part);
    case 'status':
      return el('div', { class: 'part status' },
        `status: ${part.status}${part.reason ? ` (${part.reason})` : ''}`);
    case 'error':
      return el('div', { class: 'part error' },
        `error${part.code ? ` ${part.code}` : ''}: ${part.message}`);
    default:
      return el('pre', { class: 'part other' }, JSON.stringify(part, null, 2));
  }
}

// A long text: its excerpt, then a link to the whole (the daemon streams it from the blob
// store as text/plain; a new tab shows it as it comes, the page never holds it).
function renderCutText(part) {
  const box = el('div', { class: 'part text' }, part.text);
  const url = part.content_url;
  if (typeof url === 'string' && url.startsWith(`${API}/runs/`)) {
    box.append(el('div', { class: 'hint' }, el('a', { href: url, target: '_blank', rel: 'noopener' },
      `Show all ${sizeText(part.size)}`)));
  }
  return box;
}

function sizeText(bytes) {
  if (typeof bytes !== 'number') return '';
  if (bytes >= 1e6) return `${Math.round(bytes / 1e6)} MB`;
  return bytes >= 1e3 ? `${Math.round(bytes / 1e3)} KB` : `${bytes} bytes`;
}

// An answer's parts: text as Markdown.
export function renderAnswerPart(part) {
  return renderPart(part, { markdown: true });
}

function renderFile(part) {
  const facts = [part.name || 'file', part.mime, part.size !== undefined ? `${part.size} bytes` : null]
    .filter(Boolean).join(' · ');
  const box = el('div', { class: 'part file' }, el('span', {}, facts));
  if (typeof part.sha256 === 'string' && SHA256.test(part.sha256)) {
    box.append(el('code', { class: 'hash' }, part.sha256),
      el('a', { href: `${API}/files/${part.sha256}`, download: part.name || part.sha256 }, 'download'));
  }
  if (part.uri) {
    box.append(el('span', { class: 'hint' }, `${part.uri} (not downloaded, unavailable for replay)`));
  }
  return box;
}
