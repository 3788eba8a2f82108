/**
 * The closed list of error codes svc answers with. Each maps to one HTTP status; docs/errors.md
 * lists them all. Only `status`, `statusCode`, `message`, `errors` and (412) `current` ever reach the wire.
 */
export const errorStatus = {
  BAD_REQUEST: 400,
  INVALID_JSON: 400,
  INVALID_QUERY: 400,
  FORBIDDEN_OPERATOR: 400,
  VALIDATION_FAILED: 400,
  NO_MATCH: 400,
  CANCELLED: 400,
  UNAUTHORIZED: 401,
  BAD_CREDENTIALS: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  PRECONDITION_FAILED: 412,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  TOO_MANY_REQUESTS: 429,
  INTERNAL: 500,
  SCRIPT_ERROR: 500,
  SCRIPT_TIMEOUT: 500,
  SCRIPT_RESTARTED: 503,
  BAD_GATEWAY: 502,
  UNAVAILABLE: 503,
  MIGRATION_FAILED: 503,
  STORAGE_FAILED: 503,
  STORAGE_FULL: 507,
} as const;

/** A stable, machine-readable error code. */
export type ErrorCode = keyof typeof errorStatus;

/**
 * The error object of the spec, exactly what a client receives. `statusCode` repeats `status`:
 * Deployd's errors carried both (clients and scripts written for it read either).
 */
export interface ErrorBody {
  status: number;
  statusCode: number;
  message?: string;
  errors?: Record<string, string>;
  /** PRECONDITION_FAILED: the object as the caller may read it now. */
  current?: Record<string, unknown>;
}

/** Options of {@link SvcError}. */
export interface SvcErrorOptions {
  /** Overrides the code's status (scripts may cancel with any status >= 400). */
  status?: number;
  errors?: Record<string, string>;
  cause?: unknown;
  /** Extra response headers (Retry-After, Allow, ...). */
  headers?: Record<string, string>;
  /** PRECONDITION_FAILED: the object as the caller may read it now (passed through the read rules). */
  current?: Record<string, unknown>;
}

/** The one error class of svc: a stable code, an HTTP status and only safe fields on the wire. */
export class SvcError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly errors: Record<string, string> | undefined;
  readonly headers: Record<string, string> | undefined;
  readonly current: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message?: string, options: SvcErrorOptions = {}) {
    super(message ?? code, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SvcError';
    this.code = code;
    this.status = options.status ?? errorStatus[code];
    this.errors = options.errors;
    this.headers = options.headers;
    this.current = options.current;
    if (message === undefined) this.message = '';
  }

  /** The JSON error object sent to clients. */
  toJSON(): ErrorBody {
    return errorBody(this);
  }
}

/**
 * The JSON error object of an {@link SvcError}: every error body svc writes is made here, also
 * for an SvcError of another copy of this package (a resource type's own), whose toJSON may be older.
 */
export function errorBody(err: Pick<SvcError, 'status' | 'message' | 'errors'> & { current?: Record<string, unknown> | undefined }): ErrorBody {
  const body: ErrorBody = { status: err.status, statusCode: err.status };
  if (err.message) body.message = err.message;
  if (err.errors && Object.keys(err.errors).length > 0) body.errors = err.errors;
  if (err.status === 412 && err.current !== undefined) body.current = err.current;
  return body;
}

/** True for an {@link SvcError}, also across package copies. */
export function isSvcError(value: unknown): value is SvcError {
  return value instanceof SvcError || (value instanceof Error && value.name === 'SvcError' && 'code' in value);
}
