import { useCallback, useEffect, useState } from 'preact/hooks';
import { call, rootKey } from './api.ts';
import { counted } from './words.ts';

interface Backup {
  name: string;
  size: number;
  time: string;
}

interface BackupList {
  store: string;
  backups: Backup[];
}

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * Downloads through fetch (the root key is a header, which a plain link cannot carry), then hands
 * the file to the browser.
 */
async function download(name: string): Promise<void> {
  const res = await fetch(`/dashboard/api/backups/${encodeURIComponent(name)}`, { headers: { 'svc-ssh-key': rootKey.get() ?? 'development' } });
  if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** The backups in <app>/backups: take one now, download one, restore one (on MongoDB: the svc restore command). */
export function BackupsPage() {
  const [list, setList] = useState<BackupList | undefined>();
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<string | undefined>();
  const [restoring, setRestoring] = useState<string | undefined>();
  const load = useCallback(async () => {
    try {
      setList(await call<BackupList>('GET', '/dashboard/api/backups'));
    } catch (err) {
      setMessage((err as Error).message);
    }
  }, []);
  useEffect(() => {
    void load();
  }, [load]);
  const take = async () => {
    setBusy(true);
    setMessage(undefined);
    try {
      const made = await call<Backup & { objects: number }>('POST', '/dashboard/api/backups');
      setMessage(`Wrote ${made.name}: ${counted(made.objects, 'object')}, ${size(made.size)}.`);
      await load();
    } catch (err) {
      setMessage((err as Error).message);
    }
    setBusy(false);
  };
  const db = list && list.store !== 'embedded' ? ' --db <the URL the server uses>' : '';
  return (
    <div class="page" data-test="backups-page">
      <div class="res-head">
        <div>
          <h1>Backups</h1>
          <span class="muted">Files in <code>backups/</code> of the app folder</span>
        </div>
        <span class="grow" />
        <button class="btn primary" onClick={() => void take()} disabled={busy} data-test="take-backup">{busy ? 'Taking a backup…' : 'Take a backup now'}</button>
      </div>
      <p class="muted small">A backup is taken while the server serves: each collection as it was at one instant, holding every write answered before it started (as <code>svc backup</code>). Backups hold password hashes and sessions: keep them as secret as the database.</p>
      {message && <div class="notice" data-test="backup-message">{message}</div>}
      {list === undefined ? (
        <div class="spinner" aria-label="loading" />
      ) : list.backups.length === 0 ? (
        <p class="muted">No backups yet.</p>
      ) : (
        <table class="grid" data-test="backup-list">
          <thead><tr><th>Name</th><th>Size</th><th>Written</th><th /></tr></thead>
          <tbody>
            {list.backups.map((b) => (
              <tr key={b.name} data-backup={b.name}>
                <td class="mono">{b.name}</td>
                <td>{size(b.size)}</td>
                <td>{new Date(b.time).toLocaleString()}</td>
                <td class="row end">
                  <button class="btn small" onClick={() => void download(b.name).catch((err: Error) => setMessage(err.message))}>Download</button>
                  <button class="btn small ghost" onClick={() => setRestoring(restoring === b.name ? undefined : b.name)}>Restore…</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {restoring && list?.store === 'embedded' && <RestoreDialog name={restoring} close={() => setRestoring(undefined)} done={(text) => { setRestoring(undefined); setMessage(text); void load(); }} />}
      {restoring && list && list.store !== 'embedded' && (
        <div class="card" data-test="restore-help">
          <h3>Restore {restoring}</h3>
          <p>On MongoDB other processes may write to the database, so a restore runs with every server of the app stopped. In the app folder:</p>
          <pre class="code">{`svc restore . --from backups/${restoring}${db}`}</pre>
          <p class="muted small">It checks the whole file first, saves what the store holds now as <code>backups/before-import-&lt;time&gt;.jsonl</code>, then replaces it.</p>
        </div>
      )}
    </div>
  );
}

/** Asks before a restore on the running server, and says what it does. */
function RestoreDialog({ name, close, done }: { name: string; close(): void; done(message: string): void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const run = async () => {
    setBusy(true);
    try {
      const r = await call<{ objects: number; safetyFile: string; sessionsEnded: number }>('POST', `/dashboard/api/backups/${encodeURIComponent(name)}/restore`, { confirm: name });
      done(`Restored ${name}: the store holds its ${counted(r.objects, 'object')}. What it held before is in ${r.safetyFile}. ${counted(r.sessionsEnded, 'signed-in session')} ended.`);
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };
  return (
    <div class="modal-back" onClick={busy ? undefined : close}>
      <div class="card modal" data-test="restore-dialog" onClick={(e) => e.stopPropagation()}>
        <h2>Restore {name}?</h2>
        <p>Every object of the store is replaced by those of this backup. What the store holds now is saved first as a <code>before-restore-…</code> backup, and put back if the restore fails.</p>
        <p class="muted small">While it runs, the app answers its requests with 503 (Retry-After). Afterwards every signed-in user signs in again.</p>
        {error && <p class="field-error">{error}</p>}
        <div class="row end">
          <button type="button" class="btn ghost" onClick={close} disabled={busy}>Cancel</button>
          <button type="button" class="btn primary danger" onClick={() => void run()} disabled={busy} data-test="confirm-restore">{busy ? 'Restoring…' : 'Restore'}</button>
        </div>
      </div>
    </div>
  );
}
