// The page's footer: how much disk history takes now and the retention policy when one is
// set, from `/health`'s `history` ({bytes, max_bytes, max_age_days}; a limit is null when
// not set). Read at load and again, at most every few seconds, as history changes.
const UNITS = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
const EVERY_MS = 5000;

export function size(bytes) {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit ? `${value.toFixed(value < 10 ? 1 : 0)} ${UNITS[unit]}` : `${bytes} bytes`;
}

// The footer's text for a `history` object, or '' when the daemon gives none.
export function historyText(history) {
  if (!history || typeof history.bytes !== 'number') return '';
  const limits = [];
  if (typeof history.max_bytes === 'number') limits.push(`at most ${size(history.max_bytes)}`);
  if (typeof history.max_age_days === 'number') {
    limits.push(`${history.max_age_days} day${history.max_age_days === 1 ? '' : 's'} at most`);
  }
  const policy = limits.length
    ? `Retention: ${limits.join(', ')}; the oldest unlabelled sessions go first.`
    : 'No retention limit: history is kept until you delete it.';
  return `History: ${size(history.bytes)} on disk. ${policy}`;
}

export class HistoryFooter {
  constructor(node) {
    this.node = node;
    this.last = 0;
    this.timer = 0;
  }

  show(health) {
    const text = historyText(health && health.history);
    if (health && health.history) this.node.dataset.bytes = String(health.history.bytes);
    if (text === this.node.textContent) return;  // a write would lay the page out again
    this.node.textContent = text;
    this.node.hidden = !text;
  }

  async refresh() {
    this.last = Date.now();
    const response = await fetch('/health', { credentials: 'same-origin' });
    if (response.ok) this.show(await response.json());
  }

  // History changed: read again, at most once every few seconds.
  soon() {
    if (this.timer) return;
    const wait = Math.max(0, this.last + EVERY_MS - Date.now());
    this.timer = setTimeout(() => {
      this.timer = 0;
      this.refresh().catch(() => {});
    }, wait);
  }
}
