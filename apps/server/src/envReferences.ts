import type { ResourceConfig, SettingsSchema } from '@svc/core';

/** `${env:NAME}`, or `$${env:NAME}` (written as it is); any other `${env:` is a mistake. */
const REFERENCE = /\$?\$\{env:([^}]*)\}/g;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Root keys are no configuration: a config.json value naming them could hand them to a client. */
const FORBIDDEN = new Set(['SVC_ROOT_KEYS']);

/**
 * A resource type's config.json with its `${env:NAME}` references replaced by the environment's
 * values, so that a secret (an SMTP password) lives in the environment instead of the repository.
 * Only config.json's values go through this, once per load: never `type`, never keys, never
 * scripts nor anything a request brings. A missing variable stops the start with a message naming
 * the resource, the setting and the variable, never a value. A setting whose schema asks for a
 * number or a boolean and whose whole value is one reference takes the variable as that type.
 * The dashboard keeps reading and writing the file itself: it shows the references, not the
 * values.
 */
export function resolveEnvReferences(resource: string, config: ResourceConfig, schema: SettingsSchema | undefined, env: NodeJS.ProcessEnv = process.env): ResourceConfig {
  const out: ResourceConfig = { type: config.type };
  for (const [key, value] of Object.entries(config)) {
    if (key === 'type') continue;
    const resolved = resolveValue(value, `resource ${resource}: setting ${key}`, env);
    const spec = Object.hasOwn(schema ?? {}, key) ? schema?.[key] : undefined;
    if (typeof value !== 'string' || spec === undefined || resolved === value) {
      out[key] = resolved;
    } else if (isWholeReference(value)) {
      out[key] = typed(resolved as string, spec.type, `resource ${resource}: setting ${key}`, value);
    } else if (spec.type !== 'string') {
      // Checked here: the schema's own message would quote the value, secret included.
      throw new Error(`resource ${resource}: setting ${key} must be a ${spec.type}; a reference to the environment must then be the whole value`);
    } else {
      out[key] = resolved;
    }
  }
  return out;
}

function resolveValue(value: unknown, where: string, env: NodeJS.ProcessEnv): unknown {
  if (typeof value === 'string') return resolveString(value, where, env);
  if (Array.isArray(value)) return value.map((v, i) => resolveValue(v, `${where}[${i}]`, env));
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = resolveValue(v, `${where}.${k}`, env);
    return out;
  }
  return value;
}

function resolveString(value: string, where: string, env: NodeJS.ProcessEnv): string {
  if (!value.includes('${env:')) return value;
  return value.replace(REFERENCE, (whole: string, name: string) => {
    if (whole.startsWith('$$')) return whole.slice(1);
    if (!NAME.test(name)) throw new Error(`${where}: \${env:${name.slice(0, 40)}} must name an environment variable (letters, digits and _, not starting with a digit)`);
    if (FORBIDDEN.has(name)) throw new Error(`${where}: \${env:${name}} is not allowed: root keys are not configuration`);
    const found = env[name];
    if (found === undefined) throw new Error(`${where} refers to \${env:${name}}, which is not set in the environment`);
    return found;
  });
}

function isWholeReference(value: string): boolean {
  return /^\$\{env:[A-Za-z_][A-Za-z0-9_]*\}$/.test(value);
}

/** An environment value for a number or boolean setting; the message names the variable, not its value. */
function typed(value: string, type: string, where: string, reference: string): unknown {
  if (type === 'number') {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n)) throw new Error(`${where}: ${reference} must hold a number`);
    return n;
  }
  if (type === 'boolean') {
    if (value === 'true') return true;
    if (value === 'false') return false;
    throw new Error(`${where}: ${reference} must hold true or false`);
  }
  return value;
}
