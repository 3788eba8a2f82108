/** A Socket.IO connection over a bare WebSocket (engine.io v4 frames), connected to the main namespace. */
export async function bareSocketIo(port: number): Promise<{ ws: WebSocket; closed: () => boolean }> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/socket.io/?EIO=4&transport=websocket`);
  let closed = false;
  ws.addEventListener('close', () => (closed = true));
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener('message', (event) => {
      const frame = String(event.data);
      if (frame.startsWith('0{')) ws.send('40');
      if (frame.startsWith('40')) resolve();
    });
    ws.addEventListener('error', () => reject(new Error('websocket failed')));
    setTimeout(() => reject(new Error('no Socket.IO connect within 10 s')), 10_000).unref();
  });
  return { ws, closed: () => closed };
}
