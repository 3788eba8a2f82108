/**
 * SQLite's word for a disk that refuses a write, as the errno code the store's DiskState reports
 * (507 STORAGE_FULL, 503 STORAGE_FAILED): SQLITE_FULL is ENOSPC, SQLITE_IOERR (any of its
 * extended codes) EIO, SQLITE_READONLY EROFS. Any other error is answered as it is.
 */
export function sqliteDiskError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const errcode = (err as { errcode?: unknown }).errcode;
  if (typeof errcode !== 'number') return err;
  const code = ERRNO[errcode & 0xff];
  return code === undefined ? err : Object.assign(new Error(err.message, { cause: err }), { code });
}

const ERRNO: Record<number, string> = { 13: 'ENOSPC', 10: 'EIO', 8: 'EROFS' };
