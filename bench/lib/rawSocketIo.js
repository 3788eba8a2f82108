// A raw `ws` socket speaking Engine.IO v4 / Socket.IO v5 itself (open, connect, ping/pong, events,
// acks), so that the client side of a realtime bench costs little and the same for every variant.
import WebSocket from 'ws';

/**
 * Opens a Socket.IO socket to the server at `port` (`headers`: e.g. a session cookie) and calls
 * `on.connected()` once Socket.IO connected, `on.ack(answer)` with an acknowledgement's first
 * argument, `on.event(name, data)` for each event and `on.refused(text)` for a connect error.
 */
export function rawSocketIo(port, { headers = {}, on }) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/socket.io/?EIO=4&transport=websocket`, { perMessageDeflate: false, headers });
  ws.on('message', (buf) => {
    const text = buf.toString();
    const type = text.charCodeAt(0);
    if (type === 50 /* '2' ping */) return ws.send('3');
    if (type === 48 /* '0' open */) return ws.send('40');
    if (type !== 52 /* '4' message */) return;
    const packet = text.charCodeAt(1);
    if (packet === 48 /* '0' connected */) on.connected?.();
    else if (packet === 51 /* '3' ack */) on.ack?.(JSON.parse(text.slice(text.indexOf('[')))[0]);
    else if (packet === 50 /* '2' event */) {
      const [event, data] = JSON.parse(text.slice(2));
      on.event?.(event, data);
    } else if (packet === 52 /* '4' connect error */) on.refused?.(text);
  });
  return ws;
}
