// The Playground API on this origin: the token cookie rides along, nothing else is needed.
// The API's words (prefix, statuses, reasons, kinds) come from wire.js, generated from the
// wire declaration (scripts/gen_wire).

import { API } from './wire.js';

export { ACTIVE, API, RUN_STATUSES, TERMINAL } from './wire.js';

export class ApiError extends Error {
  constructor(status, detail) {
    super(`${status} ${detail.error}: ${detail.message}`);
    this.status = status;
    this.detail = detail;
  }
}

export async function call(method, path, body) {
  // The front wants application/json on every state-changing request, body or not.
  const response = await fetch(API + path, {
    method,
    headers: { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
  });
  const text = await response.text();
  let doc = null;
  try { doc = text ? JSON.parse(text) : null; } catch { doc = text; }
  if (!response.ok) {
    const detail = (doc && doc.detail) || { error: `http_${response.status}`,
                                            message: String(text).slice(0, 200) };
    throw new ApiError(response.status, detail);
  }
  return doc;
}

// Every page of a keyset-paged list (capped: a long history shows its first pages).
export async function all(path, key, maxPages = 10) {
  const items = [];
  let after = null;
  for (let page = 0; page < maxPages; page += 1) {
    const sep = path.includes('?') ? '&' : '?';
    const doc = await call('GET', `${path}${sep}limit=1000${after ? `&after=${encodeURIComponent(after)}` : ''}`);
    items.push(...doc[key]);
    if (!doc.next_after) break;
    after = doc.next_after;
  }
  return items;
}

// `items` and a further page of them, without those already there (a row that moved while
// the pages were read comes once).
export function withPage(items, page) {
  const known = new Set(items.map((item) => item.id));
  return items.concat(page.filter((item) => !known.has(item.id)));
}
