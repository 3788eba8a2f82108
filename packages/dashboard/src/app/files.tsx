import { useEffect, useState } from 'preact/hooks';
import { fileBlob, fileCall } from './api.ts';

/** What a file property holds for each file (docs/files.md). */
interface FileInfo {
  id: string;
  name: string;
  size: number;
  type: string;
  url: string;
}

/** Types shown as a preview: images a browser draws without running anything (no SVG). */
const PREVIEWED = /^image\/(png|jpeg|gif|webp|avif|bmp)$/;

function filesOf(value: unknown): FileInfo[] {
  const items = Array.isArray(value) ? value : value === null || value === undefined ? [] : [value];
  return items.filter((f): f is FileInfo => typeof f === 'object' && f !== null && typeof (f as FileInfo).id === 'string' && typeof (f as FileInfo).url === 'string');
}

/**
 * A file property's cell in the data grid: each file (a preview of images, its name to download),
 * a button to remove it, and an input to upload (a one-file property: replace; `many`: add).
 * Everything goes through the app's file paths as root (/<c>/<id>/<property>), as the grid's
 * other writes; downloads are fetched with the root key and saved, never opened in this page.
 */
export function FileCell({ name, path, many, value, changed }: { name: string; path: string; many: boolean; value: unknown; changed(): void }) {
  const files = filesOf(value);
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const run = async (work: () => Promise<void>): Promise<void> => {
    setBusy(true);
    setError(undefined);
    try {
      await work();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
      changed();
    }
  };
  const upload = (list: FileList | null): Promise<void> =>
    run(async () => {
      for (const file of Array.from(list ?? [])) await fileCall(many ? 'POST' : 'PUT', `${path}?name=${encodeURIComponent(file.name)}`, file);
    });
  return (
    <td class={`cell file ${error ? 'has-error' : ''}`} data-col={name}>
      {files.map((f) => (
        <span class="file-chip" data-test="file" key={f.id} title={`${f.type}, ${f.size} bytes`}>
          {PREVIEWED.test(f.type) && <FilePreview file={f} />}
          <a href="#" onClick={(e) => { e.preventDefault(); void run(() => download(f)); }}>{f.name}</a>
          <button class="icon-btn" aria-label={`remove ${f.name}`} disabled={busy} onClick={() => void run(async () => void (await fileCall('DELETE', many ? `${path}/${f.id}` : path)))}>✕</button>
        </span>
      ))}
      <label class="file-upload">
        <input type="file" multiple={many} disabled={busy} aria-label={`upload ${name}`} onChange={(e) => void upload((e.target as HTMLInputElement).files)} />
        {busy ? '…' : many || files.length === 0 ? 'upload' : 'replace'}
      </label>
      {error && <div class="cell-error">{error}</div>}
    </td>
  );
}

/** An image's preview, fetched with the root key (an <img src> could not send it). */
function FilePreview({ file }: { file: FileInfo }) {
  const [src, setSrc] = useState<string | undefined>();
  useEffect(() => {
    let url: string | undefined;
    let live = true;
    fileBlob(file.url).then(
      (blob) => {
        if (!live) return;
        url = URL.createObjectURL(new Blob([blob], { type: file.type }));
        setSrc(url);
      },
      () => undefined,
    );
    return () => {
      live = false;
      if (url) URL.revokeObjectURL(url);
    };
  }, [file.url, file.type]);
  return src ? <img class="file-preview" src={src} alt="" data-test="file-preview" /> : null;
}

/** Saves a file: typed as bytes, so that nothing of it can run as a page of the dashboard. */
async function download(file: FileInfo): Promise<void> {
  const blob = await fileBlob(file.url);
  const url = URL.createObjectURL(new Blob([blob], { type: 'application/octet-stream' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = file.name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
