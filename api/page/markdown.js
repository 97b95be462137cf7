// An agent's Markdown as DOM. The vendored markdown-it (vendor/README.md) only parses: its
// tokens are built into elements here with el(), one known tag per token kind, so no HTML
// string is ever parsed and nothing the agent wrote becomes markup of its own. Raw HTML in
// the text stays text (html: false), images become their alt text (a link when their
// address is http(s)), a link is live only for http(s) and opens with rel=noopener
// (javascript:, data: and the rest are inert text), and a code block has a Copy button.
import MarkdownIt from './vendor/markdown-it.esm.min.mjs';
import { button, el } from './dom.js';

// Longer text is shown as plain text: parsing it would cost a long task for an answer no
// one reads as formatted prose.
export const MARKDOWN_MAX = 100_000;

const md = new MarkdownIt({ html: false, linkify: true, typographer: false });

const BLOCKS = {
  paragraph_open: 'p', blockquote_open: 'blockquote', bullet_list_open: 'ul',
  ordered_list_open: 'ol', list_item_open: 'li', thead_open: 'thead', tbody_open: 'tbody',
  tr_open: 'tr', th_open: 'th', td_open: 'td',
};
const INLINE = { em_open: 'em', strong_open: 'strong', s_open: 's' };
const ALIGN = /text-align:(left|right|center)/;

// Only http(s) addresses are followed; anything else (javascript:, data:, file:, relative)
// is not a link.
export function safeHref(href) {
  try {
    const url = new URL(href);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

// A fragment with the text's Markdown as elements (plain text past MARKDOWN_MAX).
export function renderMarkdown(text) {
  const source = String(text ?? '');
  const root = document.createDocumentFragment();
  if (source.length > MARKDOWN_MAX) {
    root.append(el('p', { class: 'plain' }, source));
    return root;
  }
  const stack = [root];
  const top = () => stack[stack.length - 1];
  for (const token of md.parse(source, {})) {
    if (token.nesting === 1) {
      const node = openBlock(token);
      if (node) {
        top().append(node.outer || node);
        stack.push(node.inner || node);
      } else {
        stack.push(top());  // a tight list's hidden paragraph: its text goes in the item
      }
    } else if (token.nesting === -1) {
      stack.pop();
    } else if (token.type === 'inline') {
      inline(token.children || [], top());
    } else if (token.type === 'fence' || token.type === 'code_block') {
      top().append(codeBlock(token.content, token.info));
    } else if (token.type === 'hr') {
      top().append(el('hr'));
    } else if (token.content) {
      top().append(el('p', {}, token.content));  // anything else: its text
    }
  }
  return root;
}

function openBlock(token) {
  if (token.hidden) return null;
  if (token.type === 'heading_open') {
    // The answer sits under the page's own headings: its levels start at h3.
    const level = Math.min(6, Number(token.tag.slice(1)) + 2);
    return el(`h${level}`, { class: 'md-heading' });
  }
  if (token.type === 'table_open') {
    // A wide table scrolls inside its own box, never the page sideways.
    const table = el('table');
    return { outer: el('div', { class: 'md-table', role: 'region', 'aria-label': 'Table', tabindex: 0 }, table),
      inner: table };
  }
  const tag = BLOCKS[token.type];
  if (!tag) return el('div');
  const props = {};
  if (tag === 'ol') {
    const given = token.attrGet('start');  // null: the list starts at 1
    const start = given === null ? 1 : Number(given);
    if (Number.isInteger(start) && start !== 1) props.start = start;
  }
  if (tag === 'th' || tag === 'td') {
    const align = ALIGN.exec(token.attrGet('style') || '');
    if (align) props.class = `align-${align[1]}`;
  }
  return el(tag, props);
}

function inline(tokens, parent) {
  const stack = [parent];
  const top = () => stack[stack.length - 1];
  for (const token of tokens) {
    switch (token.type) {
      case 'text':
        top().append(token.content);
        break;
      case 'softbreak':
        top().append('\n');
        break;
      case 'hardbreak':
        top().append(el('br'));
        break;
      case 'code_inline':
        top().append(el('code', {}, token.content));
        break;
      case 'link_open': {
        const href = safeHref(token.attrGet('href') || '');
        const node = href
          ? el('a', { href, target: '_blank', rel: 'noopener noreferrer' })
          : el('span', { class: 'link-inert', title: 'not a web address: not a link' });
        top().append(node);
        stack.push(node);
        break;
      }
      case 'image': {
        // Never an <img>: the alt text, linked when the address is a web address.
        const alt = token.content || 'image';
        const href = safeHref(token.attrGet('src') || '');
        top().append(href ? el('a', { href, target: '_blank', rel: 'noopener noreferrer' }, `[image: ${alt}]`)
          : el('span', { class: 'link-inert' }, `[image: ${alt}]`));
        break;
      }
      default:
        if (token.nesting === 1) {
          const node = el(INLINE[token.type] || 'span');
          top().append(node);
          stack.push(node);
        } else if (token.nesting === -1) {
          if (stack.length > 1) stack.pop();
        } else if (token.content) {
          top().append(token.content);
        }
    }
  }
}

function codeBlock(content, info) {
  const language = String(info || '').trim().split(/\s+/)[0];
  const code = el('code', { dataset: language ? { language } : {} }, content.replace(/\n$/, ''));
  const copy = button('Copy code', async () => {
    try {
      await navigator.clipboard.writeText(code.textContent);
      copy.textContent = 'Copied';
    } catch {
      copy.textContent = 'Copy refused: select the code';
    }
    setTimeout(() => { copy.textContent = 'Copy code'; }, 1500);
  }, { class: 'copy-code' });
  return el('div', { class: 'md-code' },
    el('div', { class: 'md-code-head' }, language ? el('span', { class: 'md-lang' }, language) : null, copy),
    el('pre', { tabindex: 0 }, code));
}
