// Server-side parts of @svc/client (`@svc/client/server`): the /svc.js route and `svc types`
// codegen. Kept out of the main entry so that a front end's bundle and type check never see
// them (nor @svc/core, whose types they use).
export { createSvcJsRoute, describeResources, renderSvcJs, SVC_RUNTIME_URL } from './svcJs.js';
export type { SvcJsRouteOptions } from './svcJs.js';
export { generateTypes } from './generateTypes.js';
export type { TypeSource } from './generateTypes.js';
