export { createClient, propertyName } from './createClient.js';
export type { ClientOptions } from './createClient.js';
export { SvcPromise } from './SvcPromise.js';
export { createSvcJsRoute, describeResources, renderSvcJs, SVC_RUNTIME_URL } from './svcJs.js';
export type { SvcJsRouteOptions } from './svcJs.js';
export { generateTypes } from './generateTypes.js';
export type { TypeSource } from './generateTypes.js';
export type {
  AccessorOf,
  BodyArgs,
  Callback,
  ClientCore,
  ClientTypes,
  CollectionAccessor,
  CollectionDef,
  Condition,
  CreateInput,
  CustomAccessor,
  CustomDef,
  DelArgs,
  ExecArgs,
  GetArgs,
  Listener,
  Listening,
  LooseAccessor,
  MethodArgs,
  Modifier,
  PropertyQuery,
  Query,
  QueryCommands,
  QueryObject,
  ResourceAccessor,
  ResourceDef,
  ResourceInfo,
  ResourceList,
  Segment,
  SessionInfo,
  SvcClient,
  SvcErrorBody,
  UnknownDef,
  UntypedClientTypes,
  UpdateInput,
  UserCollectionAccessor,
  UserCollectionDef,
} from './types.js';
