export async function runRealtime() { throw new Error('todo'); }
