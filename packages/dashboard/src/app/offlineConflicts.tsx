import { useState } from 'preact/hooks';
import { ApiError, call } from './api.ts';
import type { AppView, ResourceView } from './api.ts';

const CONFLICT_WORDS: Record<string, string> = {
  'server-wins': 'the server wins',
  'last-writer-wins': 'the last writer wins, per property',
  app: 'the app decides (its resolve callback)',
};

/**
 * How offline clients settle this collection's conflicts: config.json `offline.conflicts`
 * (docs/offline.md), chosen here. Saved through the one config path (the server checks the value
 * when it loads the resource and answers its message when it does not).
 */
export function OfflineConflicts({ resource, setApp }: { resource: ResourceView; setApp(a: AppView): void }) {
  const offline = resource.config.offline;
  const declared = typeof offline === 'object' && offline !== null ? (offline as { conflicts?: unknown }).conflicts : undefined;
  const policy = typeof declared === 'string' ? declared : 'server-wins';
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const choose = async (next: string): Promise<void> => {
    if (next === policy && declared !== undefined) return;
    setBusy(true);
    try {
      const kept = typeof offline === 'object' && offline !== null && !Array.isArray(offline) ? offline : {};
      setApp(await call<AppView>('PUT', `/dashboard/api/resources/${resource.name}`, { config: { ...resource.config, offline: { ...kept, conflicts: next } } }));
      setError(undefined);
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    }
    setBusy(false);
  };
  return (
    <span class="muted small" data-test="offline-conflicts" data-policy={policy} title="config.json offline.conflicts: how clients with a local replica (svc.offline) settle a write the server's object moved under">
      {' · '}
      <label for="offline-conflicts">offline conflicts:</label>{' '}
      <select id="offline-conflicts" value={policy} disabled={busy} onChange={(e) => void choose((e.target as HTMLSelectElement).value)}>
        {Object.entries(CONFLICT_WORDS).map(([value, words]) => (
          <option key={value} value={value}>
            {words}
          </option>
        ))}
        {CONFLICT_WORDS[policy] === undefined && <option value={policy}>{policy}</option>}
      </select>
      {declared === undefined ? ' (default)' : ''}
      {error !== undefined && (
        <span class="field-error" role="alert" data-test="offline-conflicts-error">
          {' '}
          {error}
        </span>
      )}
    </span>
  );
}
