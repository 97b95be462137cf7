// A Flow's graph as SVG, built with DOM calls (no markup strings: the CSP holds), laid out
// in layers by graph_layout.js, START on top and END at the bottom. A run colours the path
// it takes while it runs, from its trace's node.start / node.end events: a node running,
// done (with its duration) or not reached, an edge taken; an evaluator result that names a
// node marks it pass or fail. A node is a button: it opens that node's bar in the trace. A
// score's "Show … in the graph" marks its node (data-focus) and focuses it.
// Before any run (a Flow project opens with no run to show), `flowOverview` shows the same
// graph in the run pane, read from source: a node there leads to its function's source.
import { el, ms } from './dom.js';
import { END, START, layered } from './graph_layout.js';
import { sourceTarget } from './source.js';
import { STATUS } from './wire.js';

const SVG = 'http://www.w3.org/2000/svg';
const W = 132;   // px: a node's box
const H = 40;
const GAP_X = 28;
const GAP_Y = 44;
const LABEL = 17;  // characters of a name shown in its box; the whole in its title

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== null && value !== undefined) node.setAttribute(key, String(value));
  }
  node.append(...children);
  return node;
}

export class GraphView {
  // graph: `/composer-schema`'s graph ({nodes, edges}); pick(name): a node was chosen;
  // overview: no run behind it (its nodes are named, never "not reached").
  constructor(graph, pick, { overview = false } = {}) {
    this.pick = pick;
    this.overview = overview;
    this.edges = (graph.edges || []).filter((e) => Array.isArray(e) && e.length === 2);
    this.nodes = new Map();  // id -> {group, took, mark, start, end, pass}
    this.paths = new Map();  // "source>target" -> path
    this.sequence = [];      // node ids in the order they started
    const { layers, layer, order } = layered(graph.nodes || [], this.edges);
    const widest = Math.max(...layers.map((row) => row.length));
    const width = widest * (W + GAP_X) - GAP_X + 8;
    const height = layers.length * (H + GAP_Y) - GAP_Y + 8;
    const place = (id) => {
      const row = layers[layer.get(id)];
      const offset = (width - (row.length * (W + GAP_X) - GAP_X)) / 2;
      return { x: offset + order.get(id) * (W + GAP_X), y: 4 + layer.get(id) * (H + GAP_Y) };
    };
    // Sized in the graph's own units: a taken (thicker) edge keeps the same arrow head.
    const arrow = svg('marker', { id: 'graph-arrow', viewBox: '0 0 10 10', refX: 9, refY: 5,
      markerWidth: 10, markerHeight: 10, markerUnits: 'userSpaceOnUse', orient: 'auto-start-reverse' },
    svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'graph-arrow' }));
    const edgeLayer = svg('g', { class: 'graph-edges' });
    for (const [source, target] of this.edges) {
      const a = place(source);
      const b = place(target);
      const down = b.y > a.y;
      const [x1, y1] = [a.x + W / 2, down ? a.y + H : a.y];
      const [x2, y2] = [b.x + W / 2, down ? b.y : b.y + H];
      const bend = Math.max(20, Math.abs(y2 - y1) / 2);
      const path = svg('path', { class: 'graph-edge', 'marker-end': 'url(#graph-arrow)',
        d: `M ${x1} ${y1} C ${x1} ${y1 + (down ? bend : -bend)}, ${x2} ${y2 - (down ? bend : -bend)}, ${x2} ${y2}`,
        'data-source': source, 'data-target': target });
      this.paths.set(`${source}>${target}`, path);
      edgeLayer.append(path);
    }
    const nodeLayer = svg('g', { class: 'graph-nodes' });
    for (const row of layers) {
      for (const id of row) nodeLayer.append(this.nodeBox(id, place(id)));
    }
    this.node = svg('svg', { class: 'graph', role: 'group', 'aria-label': 'Graph',
      width, height, viewBox: `0 0 ${width} ${height}` }, svg('defs', {}, arrow), edgeLayer, nodeLayer);
  }

  nodeBox(id, at) {
    const terminal = id === START || id === END;
    const name = id === START ? 'START' : id === END ? 'END' : id;
    const label = name.length > LABEL ? `${name.slice(0, LABEL - 1)}…` : name;
    const took = svg('text', { class: 'graph-took', x: at.x + W / 2, y: at.y + 32, 'text-anchor': 'middle' });
    const group = svg('g', { class: `graph-node${terminal ? ' terminal' : ''}`, 'data-node': id,
      'data-state': 'idle' },
    svg('title', {}, name),
    svg('rect', { x: at.x, y: at.y, width: W, height: H, rx: terminal ? H / 2 : 6 }),
    // With no run behind it a box has no second line (its time): its name sits in the middle.
    svg('text', { class: 'graph-name', x: at.x + W / 2, y: at.y + (terminal || this.overview ? 25 : 17), 'text-anchor': 'middle' }, label),
    took);
    const item = { group, took, name, start: null, end: null, pass: null };
    this.nodes.set(id, item);
    if (!terminal) {
      group.setAttribute('tabindex', '0');
      group.setAttribute('role', 'button');
      group.addEventListener('click', () => this.pick(id));
      group.addEventListener('keydown', (event) => {
        if (event.key === 'Enter' || event.key === ' ') {
          event.preventDefault();
          this.pick(id);
        }
      });
    }
    this.describe(item);
    return group;
  }

  has(id) {
    return this.nodes.has(id) && id !== START && id !== END;
  }

  // Led here from elsewhere (an evaluator score): the node marked (one at a time), in view
  // and focused.
  focusNode(id) {
    const item = this.nodes.get(id);
    if (!item) return;
    for (const other of this.nodes.values()) delete other.group.dataset.focus;
    item.group.dataset.focus = 'true';
    item.group.scrollIntoView({ block: 'nearest', inline: 'nearest' });
    item.group.focus();
  }

  // A trace event, live or replayed.
  add(d) {
    const item = this.nodes.get(d.node);
    const at = typeof d.ts === 'number' ? d.ts * 1000 : null;
    if (d.type === 'node.start' && item) {
      const before = this.sequence[this.sequence.length - 1] ?? START;
      this.take(before, d.node) || this.take(START, d.node);
      this.sequence.push(d.node);
      item.start = at;
      item.end = null;
      this.set(item, 'running');
      this.set(this.nodes.get(START), 'done');
    } else if (d.type === 'node.end' && item) {
      item.end = at;
      this.set(item, 'done');
    } else if (d.type === 'evaluation.result' && item && d.passStatus) {
      item.pass = d.passStatus === 'pass' ? 'pass' : d.passStatus === 'fail' ? 'fail' : 'other';
      item.group.dataset.pass = item.pass;
      this.describe(item);
    }
  }

  // The run ended: a completed run reached END from its last node; a node left running
  // ended with the run (not "done").
  end(status) {
    for (const item of this.nodes.values()) {
      if (item.group.dataset.state === 'running') this.set(item, status === STATUS.COMPLETED ? 'done' : 'stopped');
    }
    if (status === STATUS.COMPLETED && this.sequence.length) {
      this.take(this.sequence[this.sequence.length - 1], END);
      this.set(this.nodes.get(END), 'done');
    }
  }

  take(source, target) {
    const path = this.paths.get(`${source}>${target}`);
    if (!path) return false;
    path.dataset.taken = 'true';
    return true;
  }

  set(item, state) {
    if (!item) return;
    item.group.dataset.state = state;
    if (item.start !== null && item.end !== null) item.took.textContent = ms(item.end - item.start);
    else if (state === 'running') item.took.textContent = 'running';
    this.describe(item);
  }

  describe(item) {
    if (this.overview) {
      item.group.setAttribute('aria-label', item.name);
      return;
    }
    const state = { idle: 'not reached', running: 'running', done: 'done', stopped: 'stopped' }[
      item.group.dataset.state] || item.group.dataset.state;
    const took = item.start !== null && item.end !== null ? `, ${ms(item.end - item.start)}` : '';
    const pass = item.pass ? `, evaluator ${item.pass}` : '';
    item.group.setAttribute('aria-label', `${item.name}: ${state}${took}${pass}`);
  }
}

// The Flow's graph with no run: what the project declares (`/composer-schema`, read from
// source, no Host needed), shown where a run would be. A node shows where its function is.
export function flowOverview(graph) {
  const where = el('p', { class: 'hint graph-where', role: 'status' },
    'Pick a node for its source. A run lights each node as it starts and ends.');
  const view = new GraphView(graph, async (name) => {
    where.replaceChildren(await sourceTarget(name));
  }, { overview: true });
  return el('details', { class: 'graph-box graph-overview', open: true },
    el('summary', {}, 'Graph'), el('div', { class: 'graph-scroll' }, view.node), where);
}
