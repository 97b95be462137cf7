// The answer while it streams. Deltas collect per artifact until the next animation frame,
// which writes them at once: however many deltas arrive, the answer changes once a frame,
// and a frame writes only what arrived since the last one (a text node appended, never the
// whole text again). Nothing keeps the deltas once written.
//
// The text goes into blocks of a few thousand characters: the browser lays out and paints
// again only the block that grew, not the whole answer, so a frame costs the same at the
// 10,000th delta as at the first. A block ends at a line break once it holds SOFT_BLOCK
// characters (an invisible cut), or at a space past BLOCK when no line break comes (a line
// ends a little early there until the final parts replace the stream).
import { el } from './dom.js';

const SOFT_BLOCK = 1024;
const BLOCK = 4096;
const FOLLOW_SLACK = 8;  // px: "at the end" forgives a rounding of the scroll position

export class StreamedAnswer {
  constructor(node) {
    this.node = node;            // the answer element
    this.artifacts = new Map();  // artifact_id -> {node, block, size, pending, reset}
    this.dirty = new Set();      // the artifacts with text not written yet
    this.frame = 0;
    // The answer scrolls on its own and follows the end only while the reader is there:
    // scrolling up to read stops the following, scrolling back to the end resumes it.
    this.following = true;
    this.onScroll = () => {
      this.following = node.scrollTop + node.clientHeight >= node.scrollHeight - FOLLOW_SLACK;
    };
    node.addEventListener('scroll', this.onScroll, { passive: true });
  }

  delta(d) {
    let artifact = this.artifacts.get(d.artifact_id);
    if (!artifact) {
      artifact = { node: el('div', { class: 'chunk' }), block: null, size: 0, pending: '',
        reset: false };
      this.artifacts.set(d.artifact_id, artifact);
    }
    if (d.append === false) {  // replaces what the artifact showed so far
      artifact.pending = d.text;
      artifact.reset = true;
    } else {
      artifact.pending += d.text;
    }
    this.dirty.add(artifact);
    if (!this.frame) this.frame = requestAnimationFrame(() => this.paint());
  }

  paint() {
    this.frame = 0;
    if (this.node.dataset.source !== 'stream') {
      this.node.replaceChildren();
      this.node.dataset.source = 'stream';
    }
    for (const artifact of this.dirty) {
      if (artifact.reset) {
        artifact.node.replaceChildren();
        artifact.block = null;
        artifact.size = 0;
      }
      write(artifact, artifact.pending);
      if (!artifact.node.parentNode) this.node.append(artifact.node);  // filled, then shown
      artifact.pending = '';
      artifact.reset = false;
    }
    this.dirty.clear();
    if (this.following) this.node.scrollTop = this.node.scrollHeight;
  }

  // The final parts are coming: drop what is not written, keep nothing.
  stop() {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.artifacts.clear();
    this.dirty.clear();
  }
}

// Where the current block ends within `text` (0: not in it).
function cutAt(text, size) {
  if (size < SOFT_BLOCK) return 0;
  const line = text.lastIndexOf('\n');
  if (line >= 0) return line + 1;
  return size < BLOCK ? 0 : text.lastIndexOf(' ') + 1;
}

function write(artifact, text) {
  const at = cutAt(text, artifact.size + text.length);
  const head = at ? text.slice(0, at) : text;
  if (head) {
    if (artifact.block) {
      artifact.block.append(head);
    } else {
      artifact.block = el('div', { class: 'stream-block' }, head);
      artifact.node.append(artifact.block);
    }
    artifact.size += head.length;
  }
  if (!at) return;
  const tail = text.slice(at);
  artifact.block = tail ? el('div', { class: 'stream-block' }, tail) : null;
  artifact.size = tail.length;
  if (artifact.block) artifact.node.append(artifact.block);
}
