import { SvcError } from '../../errors.js';
import { isPlainObject } from '../../query/parseQueryString.js';
import { TOKEN_PATTERN } from './AccountTokens.js';

// What a header or the SMTP envelope could be bent with is refused: see @svc/type-email's check.
const ADDRESS = /^[^\s@"<>()[\]\\,;:]+@[^\s@"<>()[\]\\,;:.]+(\.[^\s@"<>()[\]\\,;:.]+)*$/u;
const LANGUAGE = /^[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})?$/;

/** The JSON body of an account request, or a 400. */
export function bodyOf(body: unknown): Record<string, unknown> {
  if (body === undefined) return {};
  if (!isPlainObject(body)) throw new SvcError('BAD_REQUEST', 'the body must be a JSON object');
  return body;
}

/** Whether `value` is an address mail may be sent to (user@domain, nothing that bends a header). */
export function isEmailAddress(value: unknown): value is string {
  return typeof value === 'string' && value.length <= 254 && ADDRESS.test(value);
}

/** `email` of a request: a string that is an address, else 400 (an object never reaches a query). */
export function emailField(body: Record<string, unknown>): string {
  const value = body.email;
  if (typeof value !== 'string' || value === '') throw new SvcError('BAD_REQUEST', 'email must be a non-empty string', { errors: { email: 'must be a non-empty string' } });
  if (!isEmailAddress(value)) throw new SvcError('BAD_REQUEST', 'email is not an email address', { errors: { email: 'is not an email address' } });
  return value;
}

/**
 * `token` of a request: exactly the shape tokens are made in (43 base64url characters), else 400.
 * An object, array or number never gets near the store (Strapi #4442's class).
 */
export function tokenField(body: Record<string, unknown>): string {
  const value = body.token;
  if (typeof value !== 'string' || !TOKEN_PATTERN.test(value)) throw new SvcError('BAD_REQUEST', 'token must be the string sent by mail', { errors: { token: 'must be the string sent by mail' } });
  return value;
}

/** `code` of a request: a string of `length` digits, else 400. */
export function codeField(body: Record<string, unknown>, length: number): string {
  const value = body.code;
  if (typeof value !== 'string' || value.length !== length || !/^[0-9]+$/.test(value)) {
    throw new SvcError('BAD_REQUEST', `code must be a string of ${length} digits`, { errors: { code: `must be a string of ${length} digits` } });
  }
  return value;
}

/** `password` of a request: a non-empty string, else 400. */
export function passwordField(body: Record<string, unknown>): string {
  const value = body.password;
  if (typeof value !== 'string' || value === '') throw new SvcError('BAD_REQUEST', 'password must be a non-empty string', { errors: { password: 'must be a non-empty string' } });
  return value;
}

/** The language a mail is asked in: the body's `language`, else Accept-Language's first. */
export function languageOf(body: Record<string, unknown>, acceptLanguage: string | undefined): string | undefined {
  if (typeof body.language === 'string' && LANGUAGE.test(body.language)) return body.language;
  const first = acceptLanguage?.split(',')[0]?.split(';')[0]?.trim();
  return first !== undefined && LANGUAGE.test(first) ? first : undefined;
}
