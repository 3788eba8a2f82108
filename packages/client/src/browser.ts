// Entry of the browser bundle (dist/svc-client.browser.js): the SDK without the server-side parts.
export { createClient } from './createClient.js';
export type { ClientOptions } from './createClient.js';
export { SvcPromise } from './SvcPromise.js';
export { indexedDbStorage, memoryStorage } from './offline/storage.js';
export { otpauthQrSvg } from './qrSvg.js';
export type { QrSvgOptions } from './qrSvg.js';
