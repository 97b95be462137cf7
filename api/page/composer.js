// The composer: text by default; a Flow's contract tabs (or an Agent's input schemas) from
// `/composer-schema` turn the message box into the tab's JSON draft, sent as a data part.
// It knows the conversation: while the session's latest run asks for input, what is sent
// answers it (a resume); "Edit and rerun" is a mode of its own, with Cancel (and Escape),
// that ends when another run opens. Its banner says which of these Send does.
import { call } from './api.js';
import { STATUS } from './wire.js';
import { button, el } from './dom.js';
import { sourceTarget } from './source.js';
import { runName, summary } from './turn.js';

const MAX_INLINE_BYTES = 10 * 1024 * 1024;  // the API's limit per inline file, decoded

export class Composer {
  constructor(nodes) {
    this.tabsNode = nodes.tabs;
    this.message = nodes.message;
    this.hint = nodes.hint;
    this.metadata = nodes.metadata;
    this.list = nodes.attachments;
    this.examples = nodes.examples;
    this.files = [];  // file parts to send with the message
    this.tab = null;  // null: the text composer
    this.rerunOf = null;  // a run id while "Edit and rerun" is composing
    this.editing = null;  // that run
    this.asking = null;   // the session's latest run while it waits for an answer
    this.declined = null;  // the id of an asking run the person chose not to answer here
    this.banner = nodes.banner;
    // Escape in the composer leaves edit mode (before the page's Escape closes a panel).
    nodes.form.addEventListener('keydown', (event) => {
      if (event.key === 'Escape' && this.editing && !event.defaultPrevented) {
        event.preventDefault();
        this.cancelEdit();
      }
    });
    // The box grows with what it holds (a contract's JSON draft is many lines), up to the
    // height the stylesheet allows; then it scrolls.
    this.message.addEventListener('input', () => this.grow());
  }

  grow() {
    this.message.style.setProperty('height', 'auto');
    this.message.style.setProperty('height', `${this.message.scrollHeight + 2}px`);
  }

  async load() {
    const schema = await call('GET', '/composer-schema');
    const tabs = schema.tabs || [];
    this.graph = schema.graph && (schema.graph.edges || []).length ? schema.graph : null;  // a Flow's
    this.schema = schema;
    this.showText(schema);
    if (this.failure) this.hostFailing(this.failure);
    if (!tabs.length) return;
    this.tabs = tabs;
    const buttons = [button('Text', () => this.pick(null)),
      ...tabs.map((tab) => button(tab.node_id ? `${tab.node_id}: ${tab.contract}` : tab.contract || tab.id,
        () => this.pick(tab)))];
    buttons.forEach((b) => b.setAttribute('aria-pressed', 'false'));
    buttons[0].setAttribute('aria-pressed', 'true');
    this.buttons = buttons;
    this.tabsNode.replaceChildren(...buttons);
  }

  // The text composer from the AgentCard: its input modes as the placeholder, its skills'
  // examples as one-click fills; a hint when the card gives neither (or no Host is up to
  // read it from: the composer never starts one).
  showText(schema) {
    if ((schema.tabs || []).length) {  // a contract's tabs are the composer: no card hint
      this.examples.hidden = true;
      return;
    }
    const text = schema.text || {};
    const examples = (text.examples || []).filter((x) => x && x.text);
    const modes = (text.input_modes || []).join(', ');
    this.message.placeholder = modes ? `Type a message (${modes}); Ctrl+Enter sends`
      : 'Type a message; Ctrl+Enter sends';
    if (examples.length) {
      this.examples.replaceChildren(el('span', { class: 'hint' }, 'Examples:'),
        ...examples.slice(0, 12).map((x) => button(x.text, () => {
          this.pick(null);
          this.message.value = x.text;
          this.grow();
          this.message.focus();
        }, { class: 'example', title: x.skill_name ? `from the skill ${x.skill_name}` : null })));
      this.examples.hidden = false;
      return;
    }
    this.examples.hidden = false;
    this.examples.replaceChildren(el('span', { class: 'hint' }, schema.host_ready === false
      ? 'No Host is running, so the agent card (its input modes and examples) is not read yet; any text goes as a text part.'
      : 'The agent card names no input modes or examples; any text goes as a text part.'));
  }

  // The Host cannot start (backing off or in a crashloop, `/host`'s `last_error`): said here
  // instead of the examples, with its exception line; back to them once it is fixed.
  hostFailing(failure) {
    const was = this.failure;
    this.failure = failure;
    if (failure) {
      this.examples.hidden = false;
      this.examples.dataset.state = 'host-failing';
      this.examples.replaceChildren(el('span', { class: 'hint host-cannot-start', role: 'status' },
        `The Host cannot start: ${failure.exception}. Fix it and save (the Host starts again on a save), or see the Host panel.`));
    } else if (was && this.schema) {
      delete this.examples.dataset.state;
      this.showText(this.schema);
    }
  }

  pick(tab) {
    this.tab = tab;
    this.rerunOf = null;
    this.editing = null;
    const index = tab ? (this.tabs || []).indexOf(tab) + 1 : 0;
    (this.buttons || []).forEach((b, i) => b.setAttribute('aria-pressed', String(i === index)));
    if (tab) {
      this.message.value = JSON.stringify(tab.draft, null, 2);
      const required = (tab.fields || []).filter((f) => f.required).map((f) => f.name);
      this.hint.textContent = tab.fields_declared === false ? 'fields not declared'
        : required.length ? `required: ${required.join(', ')}` : '';
      if (tab.node_id) {
        sourceTarget(tab.node_id).then((node) => {
          if (this.tab === tab) this.hint.append(' · ', node);
        });
      }
    } else {
      this.message.value = '';
      this.hint.textContent = '';
    }
    this.grow();
    this.showMode();
  }

  // Edit and rerun: the run's input in the box; Send reruns it with the edited parts.
  editRerun(run) {
    const parts = (run.input && run.input.parts) || [];
    const texts = parts.filter((p) => p.kind === 'text').map((p) => p.text);
    const data = parts.find((p) => p.kind === 'data');
    if (!this.editing) this.draft = { tab: this.tab, text: this.message.value };  // back on Cancel
    this.tab = !texts.length && data ? { id: 'edit', contract: 'data', draft: data.data } : null;
    this.message.value = this.tab ? JSON.stringify(data.data, null, 2) : texts.join('\n');
    this.rerunOf = run.id;
    this.editing = run;
    this.hint.textContent = '';
    this.grow();
    this.showMode();
    this.message.focus();
  }

  // Out of edit mode: the box holds again what it held before.
  cancelEdit() {
    if (!this.editing) return;
    const draft = this.draft || { tab: null, text: '' };
    this.draft = null;
    this.editing = null;
    this.rerunOf = null;
    this.tab = draft.tab;
    this.message.value = draft.text;
    this.hint.textContent = '';
    this.grow();
    this.showMode();
  }

  // A run opened: editing another run's rerun ends (the banner would name a run not shown).
  runOpened(runId) {
    if (this.editing && this.editing.id !== runId) this.cancelEdit();
  }

  // The open session's latest run, as the thread read it: while it waits for input (and
  // nothing answered it yet), Send answers it.
  setLatest(run) {
    const asking = run && run.status === STATUS.INPUT_REQUIRED && !run.resumed_by ? run : null;
    if ((asking && asking.id) === (this.asking && this.asking.id)) {
      this.asking = asking;
      return;
    }
    this.asking = asking;
    this.showMode();
  }

  // What Send does now: rerun an edit, answer the question, or start a new run.
  mode() {
    if (this.editing) return { kind: 'edit', runId: this.editing.id };
    if (this.asking && this.declined !== this.asking.id) return { kind: 'answer', runId: this.asking.id };
    return { kind: 'new' };
  }

  showMode() {
    const mode = this.mode();
    this.banner.dataset.mode = mode.kind;
    if (mode.kind === 'edit') {
      this.banner.replaceChildren(
        el('span', { class: 'mode-text' }, el('strong', {}, 'Editing a rerun'), ` of ${runName(this.editing)}: Send starts it.`),
        button('Cancel edit', () => { this.cancelEdit(); this.message.focus(); }, { class: 'mode-action' }));
    } else if (mode.kind === 'answer') {
      this.banner.replaceChildren(
        el('span', { class: 'mode-text' }, el('strong', {}, 'The agent asks: '),
          el('span', { class: 'question' }, summary(this.asking.output) || 'for input'),
          ' Send answers it (the same conversation goes on).'),
        button('New message instead', () => {
          this.declined = this.asking.id;
          this.showMode();
          this.message.focus();
        }, { class: 'mode-action' }));
    } else if (this.asking) {
      this.banner.replaceChildren(
        el('span', { class: 'mode-text' }, 'Send starts a new run; the agent\'s question stays unanswered.'),
        button('Answer the question', () => {
          this.declined = null;
          this.showMode();
          this.message.focus();
        }, { class: 'mode-action' }));
    } else {
      this.banner.replaceChildren();
    }
    this.banner.hidden = !this.banner.firstChild;
  }

  title() {
    return this.tab ? (this.tab.contract || this.tab.id) : this.message.value.trim();
  }

  // Inline files go as base64 (the daemon stores them); a URI is never downloaded.
  async attach(fileList) {
    for (const file of fileList) {
      if (file.size > MAX_INLINE_BYTES) {
        this.hint.textContent = `${file.name} is over 10 MiB; attach it by URI`;
        continue;
      }
      const bytes = new Uint8Array(await file.arrayBuffer());
      let binary = '';
      for (let i = 0; i < bytes.length; i += 0x8000) {
        binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
      }
      this.files.push({ kind: 'file', name: file.name, mime: file.type || 'application/octet-stream',
        bytes_base64: btoa(binary) });
    }
    this.showFiles();
  }

  addUri(uri) {
    if (!uri.trim()) return;
    const name = uri.split(/[?#]/)[0].split('/').filter(Boolean).pop() || 'file';
    this.files.push({ kind: 'file', uri: uri.trim(), name });
    this.showFiles();
  }

  showFiles() {
    this.list.replaceChildren(...this.files.map((part, i) => el('li', {},
      part.uri ? `${part.name}: ${part.uri} (not downloaded, unavailable for replay)`
        : `${part.name} (${part.mime}, inline)`,
      button(`Remove ${part.name}`, () => {
        this.files.splice(i, 1);
        this.showFiles();
      }))));
  }

  // After a run started: the attachments go, and a text message (a contract's JSON draft
  // stays, to be edited and sent again).
  clear() {
    this.files = [];
    this.showFiles();
    if (!this.tab) {
      this.message.value = '';
      this.grow();
    }
  }

  // The run request body, or null (and a hint) when there is nothing valid to send.
  body() {
    const parts = this.messageParts();
    if (parts === null) return null;
    parts.push(...this.files);
    if (!parts.length) return null;
    const body = { parts };
    const metadata = this.metadata.value.trim();
    if (metadata) {
      const parsed = parseObject(metadata);
      if (typeof parsed === 'string') {
        this.hint.textContent = `metadata: ${parsed}`;
        return null;
      }
      body.metadata = parsed;
    }
    return body;
  }

  // A parse error names a position: the box selects the character there, so the error is
  // shown where it is, and the hint says its line and column.
  pointAt(text, why) {
    const found = /position (\d+)/.exec(why);
    if (!found) return;
    const at = Math.min(Number(found[1]), text.length);
    const before = text.slice(0, at).split('\n');
    this.hint.textContent = `data part: ${why.replace(/ \(line \d+ column \d+\)/, '')}`
      + ` (line ${before.length}, column ${before[before.length - 1].length + 1})`;
    this.hint.dataset.line = String(before.length);
    this.message.focus();
    this.message.setSelectionRange(at, Math.min(at + 1, text.length));
  }

  messageParts() {
    const value = this.message.value;
    if (!this.tab) return value.trim() ? [{ kind: 'text', text: value }] : [];
    const data = parseObject(value);
    if (typeof data === 'string') {
      this.hint.textContent = `data part: ${data}`;
      this.pointAt(value, data);
      return null;
    }
    return [{ kind: 'data', data }];
  }
}

// A JSON object, or a string saying why the text is not one.
function parseObject(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `not JSON: ${error.message}`;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return 'not a JSON object';
  }
  return value;
}
