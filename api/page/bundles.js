// Bundles: export (the privacy warning first) as a downloaded file, import from a file with
// the API's validation errors shown as it gives them.
import { call } from './api.js';

export const PRIVACY = 'A bundle holds the runs\' inputs, outputs, files and metadata (secrets '
  + 'redacted as stored). Anyone you give it to can read them all. Export?';

export async function exportBundle(sessionId) {
  if (!window.confirm(PRIVACY)) return null;
  const bundle = await call('POST', '/bundles/export', sessionId ? { session_ids: [sessionId] } : {});
  const blob = new Blob([JSON.stringify(bundle)], { type: 'application/json' });
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = `llamon-playground-${sessionId || 'all'}.json`;
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
