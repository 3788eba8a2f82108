/**
 * @svc/type-webhook: the Webhook resource. It POSTs a collection's creates, updates and deletes,
 * signed with HMAC-SHA256, from a durable outbox in the app's store; the default export is the
 * resource type the server loads. `verifySignature` checks a delivery on the receiver's side.
 */
import { webhookType } from './webhookType.js';

export { webhookType, createWebhook } from './webhookType.js';
export type { WebhookTimings } from './webhookType.js';
export { DEFAULT_TOLERANCE_SECONDS, SIGNATURE_HEADER, signPayload, verifySignature } from './signature.js';
export type { VerifyOptions } from './signature.js';
export { WEBHOOK_SETTINGS } from './internal/settings.js';
export type { WebhookEvent, WebhookSettings } from './internal/settings.js';
export type { WebhookPayload } from './internal/payload.js';
export type { DeliveryStatus, DeliveryView } from './internal/outbox.js';
export { retryDelay } from './internal/backoff.js';
export default webhookType;
