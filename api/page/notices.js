// The header's notice. Each notice has an owner, and the owner's end clears it: a 409's
// notice (owner `run:<id>`) ends when that run ends; a 503's (owner `daemon`) when the daemon
// answers again; an action's (owner `action`) with the next action's notice or its ×.
// A notice whose owner already ended is never left behind with advice that is no longer true.

import { call } from './api.js';
import { button, el } from './dom.js';
import { runName } from './turn.js';

export const DAEMON = 'daemon';
export const ACTION = 'action';

// The command that starts the project's daemon, its path quoted as a shell would need.
export function upCommand(project) {
  if (!project) return 'llamon-playground up';
  const quoted = /^[A-Za-z0-9_./-]+$/.test(project) ? project : `'${project.replaceAll("'", "'\\''")}'`;
  return `llamon-playground up ${quoted}`;
}

export class Notices {
  constructor(node, dismiss) {
    this.node = node;        // the notice text
    this.dismiss = dismiss;  // its × button
    this.owner = null;
    this.project = null;     // the project's path, once /health said it: named in commands
    dismiss.addEventListener('click', () => this.clear());
  }

  // `actions`: links and buttons after the text (a 409's "Open that run", "Cancel that run").
  show(text, owner = ACTION, actions = []) {
    if (!text) {
      this.clear();
      return;
    }
    this.owner = owner;
    this.node.textContent = text;
    for (const action of actions) this.node.append(' ', action);
    this.node.dataset.owner = owner;
    this.node.hidden = false;
    this.dismiss.hidden = false;
  }

  // An API error: a 503 belongs to the daemon's absence, and says what is true while it lasts.
  fail(error) {
    if (error && error.status === 503 && error.detail && error.detail.error === 'daemon_unavailable') {
      this.show('The daemon does not answer (503 daemon_unavailable). The page reconnects '
        + `by itself; if it stays lost, start it with \`${upCommand(this.project)}\`.`, DAEMON);
      return;
    }
    this.show(error && error.message ? error.message : String(error));
  }

  // The owner's end: its notice goes; another owner's stays.
  end(owner) {
    if (this.owner === owner) this.clear();
  }

  clear() {
    this.owner = null;
    this.node.textContent = '';
    delete this.node.dataset.owner;
    this.node.hidden = true;
    this.dismiss.hidden = true;
  }
}

// A 409's notice: the active run named (as the thread names it) with its session, a link to
// it and its Cancel; owned by that run, so it ends when the run does. Nothing else moves:
// the view, the session and the draft stay where they were.
export async function conflictNotice(notices, active, fail) {
  const run = await call('GET', `/runs/${encodeURIComponent(active)}`).catch(() => null);
  const session = run && run.session_id
    ? await call('GET', `/sessions/${encodeURIComponent(run.session_id)}`).catch(() => null) : null;
  const where = session ? ` in session "${session.title || 'untitled'}"`
    : run && run.session_id ? ` in session ${run.session_id}` : '';
  const named = run ? `"${runName(run)}" (${active})` : active;
  notices.show(`Another run is active: ${named}${where}. Your message was not sent; it is still in the box.`,
    `run:${active}`, [
      el('a', { href: `#${active}`, class: 'notice-link' }, 'Open that run'),
      button('Cancel that run', async () => {
        try {
          await call('DELETE', `/runs/${encodeURIComponent(active)}`);
        } catch (error) {
          fail(error);
        }
      }, { class: 'notice-action' })]);
}
