// The page's keyboard: Escape closes the open panel (the shortcut list, the Host panel,
// the first-entry notice, the Host logs), `?` opens the shortcut list, `/` goes to the Message box; none of them
// while a text field has the focus (there they are text). The skip link, the first Tab stop,
// goes to the Message box too.
const TYPING = new Set(['INPUT', 'TEXTAREA', 'SELECT']);

export function wireKeys({ shortcuts, hostPanel, logs, welcome, message }) {
  document.getElementById('shortcuts-button').addEventListener('click', () => shortcuts.showModal());
  document.getElementById('shortcuts-close').addEventListener('click', () => shortcuts.close());
  // The skip link moves the focus itself (and shows the thread below 1100 px): following
  // `#message` would replace the open run's address.
  document.getElementById('skip-to-message').addEventListener('click', (event) => {
    event.preventDefault();
    showPanel('thread');
    message.focus();
  });
  document.addEventListener('keydown', (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === 'Escape') {
      // The dialog closes itself on Escape; the other panels close here, innermost first.
      if (hostPanel.open) {
        hostPanel.open = false;
        hostPanel.querySelector('summary').focus();
      } else if (welcome.isOpen()) {
        welcome.dismiss();
      } else if (logs.isOpen()) {
        logs.close();
      }
      return;
    }
    if (TYPING.has(document.activeElement && document.activeElement.tagName)) return;
    if (event.key === '?') {
      event.preventDefault();
      shortcuts.showModal();
    } else if (event.key === '/') {
      event.preventDefault();
      showPanel('thread');
      message.focus();
    }
  });
}

// Below 1100 px one panel shows at a time (style.css): Sessions, Thread or Run.
export function wirePanels(show) {
  for (const tab of document.querySelectorAll('.panel-tabs [data-panel]')) {
    tab.addEventListener('click', () => show(tab.dataset.panel));
  }
}

export function showPanel(panel) {
  document.body.dataset.panel = panel;
  for (const tab of document.querySelectorAll('.panel-tabs [data-panel]')) {
    tab.setAttribute('aria-pressed', String(tab.dataset.panel === panel));
  }
}
