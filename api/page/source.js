// Where a Flow node's function is (`/source-targets/{node}`): `file:line` as a link an
// editor understands (vscode://file/…) and the plain path to copy. The project's folder
// comes from `/health`, read once.
import { call } from './api.js';
import { button, el } from './dom.js';

let projectDir = null;

async function project() {
  if (projectDir === null) {
    const response = await fetch('/health', { credentials: 'same-origin' });
    projectDir = response.ok ? (await response.json()).project || '' : '';
  }
  return projectDir;
}

export async function sourceTarget(nodeId) {
  let target;
  try {
    target = await call('GET', `/source-targets/${encodeURIComponent(nodeId)}`);
  } catch (error) {
    return el('span', { class: 'hint source-target' }, error.detail ? error.detail.message : error.message);
  }
  const dir = await project();
  const path = dir ? `${dir.replace(/\/$/, '')}/${target.file}` : target.file;
  const where = `${target.file}:${target.line}`;
  return el('span', { class: 'source-target' },
    `${target.node_id} → ${target.qualname || target.function} at `,
    el('a', { href: `vscode://file${path.startsWith('/') ? '' : '/'}${encodeURI(path)}:${target.line}` }, where),
    ' ', button('Copy path', () => navigator.clipboard.writeText(`${path}:${target.line}`)));
}
