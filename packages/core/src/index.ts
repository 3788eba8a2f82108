export { SvcError, isSvcError, errorStatus } from './errors.js';
export type { ErrorBody, ErrorCode, SvcErrorOptions } from './errors.js';
export { createServer, recursionLimitOf } from './server.js';
export type { AccessLogOptions, ExtraRoute, InternalRequest, RequestObserver, RequestSample, ServerDrainOptions, SessionChange, SessionChangeListener, SvcServer, SvcServerOptions } from './serverTypes.js';
export { DEFAULT_HEALTH_PATHS } from './http/health.js';
export { isAnswerStatus } from './http/reply.js';
export type { HealthOptions } from './http/health.js';
export type { DrainOutcome } from './http/connectionDrain.js';
export { createRequestScope } from './requestScope.js';
export type { RequestScope } from './requestScope.js';
export type { Context, OnDelete, PropertyDef, PropertyType, Reply, ResourceConfig, Session } from './types.js';
export { backRelationName } from './relations/Relations.js';
export { DEFAULT_RELATION_SETTINGS, EXPAND_DEPTH_CAP, MAX_EXPANDED_RELATIONS } from './relations/relationSettings.js';
export type { RelationSettings } from './relations/relationSettings.js';
export type { ClientShape, ConflictPolicy, NowRequest, Resource, ResourceFiles, ResourceHost, RootApiRequest, UserResource } from './resource.js';
export { CONFLICT_POLICIES } from './resource.js';
export { isUserResource } from './resource.js';
export { Collection } from './resources/Collection.js';
export { AccessRules } from './access/AccessRules.js';
export type { AccessRulesSource } from './access/AccessRules.js';
export { RuleError } from './access/parseRule.js';
export { ACCESS_ACTIONS } from './access/ruleTypes.js';
export type { AccessAction, AccessRulesConfig, RuleSource, RuleVariables } from './access/ruleTypes.js';
export type { AccessExplanation } from './access/CollectionAccess.js';
export { deepEqual } from './resources/updates.js';
export type { CollectionOptions } from './resources/Collection.js';
export { ANSWER_PLANS } from './resources/read/answerPlan.js';
export type { AnswerPlan } from './resources/read/answerPlan.js';
export type { VisibilityFacts } from './access/Visibility.js';
export { UserCollection } from './resources/UserCollection.js';
export type { UserAccountOptions, UserCollectionOptions } from './resources/UserCollection.js';
export { parseAuthSettings } from './resources/accounts/authSettings.js';
export type { AuthSettings, MfaSettings, OAuthProviderSettings, OAuthSettings } from './resources/accounts/authSettings.js';
export { PROVIDER_PRESETS } from './resources/accounts/oauthProviders.js';
export type { ProviderPreset } from './resources/accounts/oauthProviders.js';
export { sendsMail } from './resources/accounts/accountSettings.js';
export type { AccountPolicy, AccountSettings } from './resources/accounts/accountSettings.js';
export type { AccountMail, AccountMailer, AccountMailKind } from './resources/accounts/AccountMailer.js';
export { LoginLimiter, loginLimitSettings } from './resources/loginLimiter.js';
export type { LoginAttempt, LoginLimiterOptions, LoginLimits, LoginLimitsFactory, LoginLimitSettings } from './resources/loginLimiter.js';
export type { CollectionEvent, CollectionEventRunner, EventInput, EventOutcome, GetChanges, GetColumns } from './resources/events.js';
export type { ChangesWanted, CollectionChange, CollectionChangeListener, InCommitListener, ObjectChange, StagedChange, WrittenChange } from './resources/changes.js';
export { AggregateScanError, AggregateTimeoutError, DuplicateKeyError, isCollectionName, assertCollectionName } from './store/Store.js';
export type { AggregateRow, AggregateSpec, Doc, Filter, FindOptions, IndexSpec, KeptList, ManyOps, RemoveHooks, Revised, Store, StoreCollection, StoredTexts, UpdateOps, WriteCondition, WriteHooks } from './store/Store.js';
export { forwardCollection, forwardStore, NOW_METHODS, PROMISED_METHODS, STORE_METHODS } from './store/forwardStore.js';
export type { CollectionForwarding, NowMethod, PromisedMethod, StoreForwarding } from './store/forwardStore.js';
export { checkValue as checkMigrationValue, describeStep, formatMigration, invalidWords, isMigrationId, isReversible, MIGRATION_FORMAT, parseMigration } from './migrations/migration.js';
export type { InvalidValues, Migration, MigrationStep } from './migrations/migration.js';
export { conversionNote, convertValue } from './migrations/convertValue.js';
export type { Conversion } from './migrations/convertValue.js';
export { advanceShape, diffShapes, newMigrationId, shapeOf } from './migrations/diffProperties.js';
export type { CollectionShape, PropertyShape, ReadShape } from './migrations/diffProperties.js';
export { applyMigrations, forgetRecord, MIGRATIONS_COLLECTION, pendingOf, readRecords, recordApplied, undoMigration, undoTarget } from './migrations/applyMigrations.js';
export type { ApplyOutcome, BlockedCollection, MigrationRecord, MigrationsOptions, MigrationState, UndoOutcome } from './migrations/applyMigrations.js';
export { dryRunDown, dryRunUp, migrationStatus } from './migrations/migrationReport.js';
export type { DryRunMigration, DryRunStep, MigrationStatus } from './migrations/migrationReport.js';
export { MigrationStepError, VALUES_COLLECTION } from './migrations/steps.js';
export { acquireLease, DEFAULT_LEASE_MS, LeaseLostError, migrationWriteLimits } from './migrations/lease.js';
export type { Lease, LeaseOptions, MigrationWriteLimits } from './migrations/lease.js';
export { SessionManager } from './sessions.js';
export type { SessionEndListener, SessionManagerOptions, SessionRecord } from './sessions.js';
export { createConsoleLogger, DEFAULT_LOG_BACKLOG, LOG_FORMATS, redactText, silentLogger } from './logger.js';
export type { AccessEntry, ConsoleLogger, ConsoleLoggerOptions, LogFormat, Logger, LogLevel, LogStream } from './logger.js';
export { createId } from './ids.js';
export { crashPoint } from './crashPoint.js';
export { isLocalHostName } from './rootKeys.js';
export { redactUrl } from './redactUrl.js';
export { escapeLineBreaks } from './lineBreaks.js';
export { withoutPaths } from './withoutPaths.js';
export { isPlainObject, parseQueryString } from './query/parseQueryString.js';
export { compileQuery } from './query/compileQuery.js';
export type { CompiledQuery, QueryRefusals } from './query/compileQuery.js';
export { CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS } from './http/cors.js';
export { etagOf } from './resources/conditional.js';
export { readCookie, requestSessionId } from './http/cookies.js';
export type { CorsOptions } from './http/cors.js';
export { servedFile } from './http/servedFile.js';
export { createDiskFileStorage } from './files/diskFileStorage.js';
export type { FileStorage, OpenedFile, StoredEntry } from './files/FileStorage.js';
export type { CollectionFilesConfig } from './files/filesConfig.js';
export { ReceivedFiles } from './files/receiveFile.js';
export { ThumbnailQueues } from './files/thumbnails.js';
export type { StoredFile } from './files/CollectionFiles.js';
export type { ThumbSize } from './files/fileSettings.js';
export { DEFAULT_MAX_PIXELS } from './files/thumbnails.js';
export type { Thumbnailer } from './files/thumbnails.js';
export { DEFAULT_SWEEP } from './files/orphanSweep.js';
export type { SweepSchedule } from './files/orphanSweep.js';
export { sniffType } from './files/sniffType.js';
export type { ServedFile } from './http/servedFile.js';
export { clientAddress, DEFAULT_HTTP_LIMITS } from './http/svcHttpServer.js';
export { ProxyTrust } from './http/ProxyTrust.js';
export type { RequestClient, TrustProxySetting } from './http/ProxyTrust.js';
export type { HttpLimits } from './http/svcHttpServer.js';
export { createEmbeddedStore, matchesFilter } from './store/embeddedStore.js';
export { createEngineStore, DEFAULT_EMBEDDED_ENGINE, ENGINE_FILE, engineSupported, MAX_CACHE_MB, MAX_MMAP_MB, replaceEngineDatabase } from './store/embedded/index.js';
export type { EmbeddedEngine, EngineStoreOptions } from './store/embedded/index.js';
export { snapshotEngineStore } from './store/embedded/snapshot.js';
export { matchesSearch, searchWords, MAX_SEARCH_LENGTH, MAX_SEARCH_WORDS } from './query/search.js';
export type { SearchFilter } from './query/search.js';
export { snapshotEmbeddedStore, collectionOfDataFile, dataFileOfCollection } from './store/embeddedSnapshot.js';
export type { EmbeddedSnapshot, SnapshotCollection } from './store/embeddedSnapshot.js';
export { lockDataFolder } from './store/internal/dataLock.js';
export type { EmbeddedStoreOptions } from './store/embeddedStore.js';
export { createMongoStore } from './store/mongoStore.js';
export type { MongoStoreOptions } from './store/mongoStore.js';
export { coreRangeOf, defineResourceType, isResourceType, validateSettings, mountResource, cancelError } from './resourceType.js';
export type {
  AnyResourceType,
  EventScripts,
  OutboundAccess,
  ResourceImplementation,
  ResourceType,
  ResourceTypeContext,
  ResourceTypeDefinition,
  ScheduledJobs,
  ScriptOutcome,
  ScriptRunInput,
  SettingSpec,
  SettingType,
  SettingsSchema,
} from './resourceType.js';
export { RecordingRealtime } from './realtime.js';
export type { Realtime, RecordedMessage } from './realtime.js';
export { classifyAddress, parseIp } from './net/addresses.js';
export type { AddressClass, AddressKind } from './net/addresses.js';
export { OutboundPolicy } from './net/outboundPolicy.js';
export { outboundErrorCode, outboundFetch } from './net/outbound.js';
export type { OutboundErrorCode, OutboundLookup, OutboundRequest, OutboundResponse } from './net/outbound.js';
