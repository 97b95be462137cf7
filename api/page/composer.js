// The composer: text by default; a Flow's contract tabs (or an Agent's input schemas) from
// `/composer-schema` turn the message box into the tab's JSON draft, sent as a data part.
import { call } from './api.js';
import { button } from './dom.js';

export class Composer {
  constructor(tabsNode, messageNode, hintNode) {
    this.tabsNode = tabsNode;
    this.message = messageNode;
    this.hint = hintNode;
    this.tab = null;  // null: the text composer
    this.rerunOf = null;  // a run id while "Edit and rerun" is composing
  }

  async load() {
    const schema = await call('GET', '/composer-schema');
    const tabs = schema.tabs || [];
    if (!tabs.length) return;
    this.tabs = tabs;
    const buttons = [button('Text', () => this.pick(null)),
      ...tabs.map((tab) => button(tab.contract || tab.id, () => this.pick(tab)))];
    buttons.forEach((b) => b.setAttribute('aria-pressed', 'false'));
    buttons[0].setAttribute('aria-pressed', 'true');
    this.buttons = buttons;
    this.tabsNode.replaceChildren(...buttons);
  }

  pick(tab) {
    this.tab = tab;
    this.rerunOf = null;
    const index = tab ? (this.tabs || []).indexOf(tab) + 1 : 0;
    (this.buttons || []).forEach((b, i) => b.setAttribute('aria-pressed', String(i === index)));
    if (tab) {
      this.message.value = JSON.stringify(tab.draft, null, 2);
      const required = (tab.fields || []).filter((f) => f.required).map((f) => f.name);
      this.hint.textContent = tab.fields_declared === false ? 'fields not declared'
        : required.length ? `required: ${required.join(', ')}` : '';
    } else {
      this.message.value = '';
      this.hint.textContent = '';
    }
  }

  // Edit and rerun: the run's input in the box; Send reruns it with the edited parts.
  editRerun(run) {
    const parts = (run.input && run.input.parts) || [];
    const texts = parts.filter((p) => p.kind === 'text').map((p) => p.text);
    const data = parts.find((p) => p.kind === 'data');
    this.tab = !texts.length && data ? { id: 'edit', contract: 'data', draft: data.data } : null;
    this.message.value = this.tab ? JSON.stringify(data.data, null, 2) : texts.join('\n');
    this.rerunOf = run.id;
    this.hint.textContent = `Editing a rerun of ${run.label || run.id}: Send starts it.`;
    this.message.focus();
  }

  title() {
    return this.tab ? (this.tab.contract || this.tab.id) : this.message.value.trim();
  }

  // The run request body, or null (and a hint) when there is nothing valid to send.
  body() {
    const value = this.message.value;
    if (!this.tab) {
      if (!value.trim()) return null;
      return { parts: [{ kind: 'text', text: value }] };
    }
    let data;
    try {
      data = JSON.parse(value);
    } catch (error) {
      this.hint.textContent = `not JSON: ${error.message}`;
      return null;
    }
    if (data === null || typeof data !== 'object' || Array.isArray(data)) {
      this.hint.textContent = 'a data part is a JSON object';
      return null;
    }
    return { parts: [{ kind: 'data', data }] };
  }
}
