// Our own small layered layout for a Flow's graph (no library): layers by the longest path
// from START (back edges of a cycle left out of the layering, still drawn), then the order
// in each layer by the mean position of a node's neighbours in the layer above (two sweeps:
// down and up), which removes most crossings of the small graphs a Flow has.

export const START = '__start__';
export const END = '__end__';

// nodes: ids (START and END added when edges name them); edges: [source, target] pairs.
// Answers {layers: [[id, ...], ...], layer: Map id -> index, order: Map id -> index}.
export function layered(nodeIds, edges) {
  const ids = [...new Set([START, ...nodeIds, ...edges.flat(), END])];
  const out = new Map(ids.map((id) => [id, []]));
  for (const [source, target] of edges) if (out.has(source)) out.get(source).push(target);
  const forward = acyclic(ids, out);
  const layer = new Map(ids.map((id) => [id, 0]));
  for (const id of topological(ids, forward)) {
    for (const next of forward.get(id)) layer.set(next, Math.max(layer.get(next), layer.get(id) + 1));
  }
  // END below everything; a node nothing leads to sits in the first row under START.
  const deepest = Math.max(0, ...ids.filter((id) => id !== END).map((id) => layer.get(id)));
  layer.set(END, Math.max(layer.get(END), deepest + 1));
  for (const id of ids) if (id !== START && layer.get(id) === 0) layer.set(id, 1);
  const layers = [];
  for (const id of ids) (layers[layer.get(id)] ||= []).push(id);
  const rows = layers.filter(Boolean);
  rows.forEach((row, i) => row.forEach((id) => layer.set(id, i)));
  const order = new Map();
  rows.forEach((row) => row.forEach((id, i) => order.set(id, i)));
  const into = new Map(ids.map((id) => [id, []]));
  for (const [source, target] of edges) if (into.has(target)) into.get(target).push(source);
  for (const sweep of [into, out]) {
    const sequence = sweep === into ? rows : [...rows].reverse();
    for (const row of sequence) {
      const mean = (id) => {
        const near = sweep.get(id).filter((n) => order.has(n) && layer.get(n) !== layer.get(id));
        return near.length ? near.reduce((sum, n) => sum + order.get(n), 0) / near.length : order.get(id);
      };
      const keys = new Map(row.map((id) => [id, mean(id)]));
      row.sort((a, b) => keys.get(a) - keys.get(b));
      row.forEach((id, i) => order.set(id, i));
    }
  }
  return { layers: rows, layer, order };
}

// The edges without those that close a cycle (found by a depth-first walk from START).
function acyclic(ids, out) {
  const forward = new Map(ids.map((id) => [id, []]));
  const state = new Map();  // 1: on the walk's path, 2: done
  const visit = (id) => {
    state.set(id, 1);
    for (const next of out.get(id) || []) {
      if (state.get(next) === 1) continue;  // a back edge
      forward.get(id).push(next);
      if (!state.has(next)) visit(next);
    }
    state.set(id, 2);
  };
  for (const id of ids) if (!state.has(id)) visit(id);
  return forward;
}

function topological(ids, forward) {
  const indegree = new Map(ids.map((id) => [id, 0]));
  for (const id of ids) for (const next of forward.get(id)) indegree.set(next, indegree.get(next) + 1);
  const ready = ids.filter((id) => indegree.get(id) === 0);
  const sorted = [];
  while (ready.length) {
    const id = ready.shift();
    sorted.push(id);
    for (const next of forward.get(id)) {
      indegree.set(next, indegree.get(next) - 1);
      if (indegree.get(next) === 0) ready.push(next);
    }
  }
  return sorted;
}
