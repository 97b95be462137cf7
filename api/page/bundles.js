// Bundles: export (the privacy warning first) as a downloaded file: the ticked runs, the
// picked session or all history; import from a file with the API's validation errors
// shown as it gives them.
import { call } from './api.js';

export const PRIVACY = 'A bundle holds the runs\' inputs, outputs, files and metadata (secrets '
  + 'redacted as stored). Anyone you give it to can read them all. Export?';

// What goes: the ticked runs when there are any, else the picked session, else all history.
export async function exportBundle(sessionId, runIds = []) {
  if (!window.confirm(PRIVACY)) return null;
  let body = {};
  let name = 'all';
  if (runIds.length) {
    body = { run_ids: runIds };
    name = runIds.length === 1 ? runIds[0] : `${runIds.length}-runs`;
  } else if (sessionId) {
    body = { session_ids: [sessionId] };
    name = sessionId;
  }
  const bundle = await call('POST', '/bundles/export', body);
  const blob = new Blob([JSON.stringify(bundle)], { type: 'application/json' });
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = `llamon-playground-${name}.json`;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
  return bundle;
}

export async function importBundle(file) {
  let doc;
  try {
    doc = JSON.parse(await file.text());
  } catch (error) {
    throw new Error(`${file.name} is not JSON: ${error.message}`);
  }
  return call('POST', '/bundles/import', { bundle: doc });
}
