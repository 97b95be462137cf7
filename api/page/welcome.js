// The first-entry notice: what the Playground may do on this machine (the trust boundary)
// and where it keeps history. Shown until dismissed, once per project (the browser's
// localStorage remembers the dismissal by the project's path), and from "Help" after.
import { button, el } from './dom.js';

const KEY = 'llamon.playground.welcomed:';

export class Welcome {
  constructor(node, helpButton) {
    this.node = node;
    this.project = null;
    helpButton.addEventListener('click', () => this.show());
  }

  // The project is known (from `/health`): shown once for it, unless dismissed before.
  forProject(project) {
    this.project = project;
    if (!seen(project)) this.show();
  }

  show() {
    const where = this.project ? `${this.project}/.llamon/playground/` : '<project>/.llamon/playground/';
    this.node.replaceChildren(
      el('h2', {}, 'Before you start'),
      el('p', {}, 'The Playground runs this project\'s agent as the Host, a process on this '
        + 'machine with your user\'s rights: anything that can send it a request can run code '
        + 'as you. Only this page (on loopback, behind the token) and the daemon\'s socket '
        + '(your user only) reach it; keep the Host\'s own port to yourself.'),
      el('p', {}, 'History stays on this machine, in the project: ',
        el('code', {}, `${where}playground.sqlite3`), ' (sessions, runs, events) and ',
        el('code', {}, `${where}files/`), ' (the files runs sent and received). '
        + 'Export bundle writes a copy; Delete all history removes it.'),
      button('Got it', () => this.dismiss(), { class: 'primary' }));
    this.node.hidden = false;
  }

  dismiss() {
    if (this.project) remember(this.project);
    this.node.hidden = true;
  }

  isOpen() {
    return !this.node.hidden;
  }
}

function seen(project) {
  try {
    return localStorage.getItem(KEY + project) === '1';
  } catch {
    return false;  // storage refused: the notice shows each time, which is safe
  }
}

function remember(project) {
  try {
    localStorage.setItem(KEY + project, '1');
  } catch {
    // nothing to keep it in; "Help" still shows it
  }
}
