/**
 * The Create KataConfig form's own checks: everything the API server would refuse that the form can see
 * for itself, all at once and in the API server's words. The API server checks in rounds (its CEL rules
 * are skipped while any other field is invalid), so a form that only relayed its answers would flag the
 * mistakes one submit at a time.
 *
 * The spec's checks come from the CRD's schema itself (src/api/kataconfig.ts, handed to the bundle at
 * build time): types, enums, patterns, lengths, required fields and the CEL rules this file understands.
 * metadata.name and metadata.labels follow the API server's built-in rules.
 */
import type { OpenAPISchema } from '../../api/schema.ts';

export interface Problem {
  /** The API field path, as the API server names it (`spec.kataConfigPoolSelector.matchExpressions[0].key`). */
  field: string;
  /** `field: message`, as the API server words it. */
  text: string;
}

type Json = unknown;
type Self = Record<string, unknown> | unknown[] | string | number | boolean | null | undefined;

const quote = (v: unknown) => JSON.stringify(v);

/** The type name the API server prints as the "value" of a CEL refusal or a type mismatch. */
function typeName(v: Json): string {
  if (Array.isArray(v)) return 'array';
  if (v === null) return 'null';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v === 'object' ? 'object' : typeof v;
}

const has = (self: Self, field: string) => !!self && typeof self === 'object' && !Array.isArray(self) && self[field] !== undefined;
const sizeOf = (v: unknown) => (Array.isArray(v) ? v.length : v && typeof v === 'object' ? Object.keys(v).length : 0);

/**
 * The CEL rules the form evaluates: the generic `matches` forms by their regex, the selector's two
 * operator rules by their text. A rule not listed here is left to the API server (unit tests check that
 * every rule of the KataConfig schema is understood).
 */
const RULES: Record<string, (self: Self) => boolean> = {
  "self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : true": (self) =>
    !['In', 'NotIn'].includes(String((self as Record<string, unknown>)?.operator)) ||
    (has(self, 'values') && sizeOf((self as Record<string, unknown>).values) > 0),
  "self.operator in ['Exists', 'DoesNotExist'] ? !has(self.values) || size(self.values) == 0 : true": (self) =>
    !['Exists', 'DoesNotExist'].includes(String((self as Record<string, unknown>)?.operator)) ||
    !has(self, 'values') ||
    sizeOf((self as Record<string, unknown>).values) === 0,
};

/** A predicate for a CEL rule, or undefined when the form cannot evaluate it. */
export function ruleCheck(rule: string): ((self: Self) => boolean) | undefined {
  if (RULES[rule]) return RULES[rule];
  let m = /^self\.(\w+)\.matches\('(.*)'\)$/.exec(rule);
  if (m) {
    const field = m[1] ?? '';
    const regex = new RegExp(m[2] ?? '');
    return (self) => !has(self, field) || regex.test(String((self as Record<string, unknown>)[field]));
  }
  m = /^self\.all\((\w+), \1\.matches\('(.*)'\)\)$/.exec(rule);
  if (m) {
    const regex = new RegExp(m[2] ?? '');
    return (self) => !self || typeof self !== 'object' || Object.keys(self).every((k) => regex.test(k));
  }
  return undefined;
}

/** Every CEL rule in a schema, for the test that the form understands each. */
export function rulesOf(schema: OpenAPISchema): string[] {
  const out = (schema['x-kubernetes-validations'] ?? []).map((v) => v.rule);
  for (const child of [...Object.values(schema.properties ?? {}), schema.items, schema.additionalProperties]) {
    if (child) out.push(...rulesOf(child));
  }
  return out;
}

/** Checks a value against its OpenAPI schema, as the API server's structural and CEL validation would. */
export function checkSchema(value: Json, schema: OpenAPISchema, path: string, out: Problem[] = []): Problem[] {
  const add = (field: string, message: string) => out.push({ field, text: `${field}: ${message}` });
  if (value === undefined || value === null) return out;
  const t = typeName(value);
  const expected = schema.type;
  if (expected && !(t === expected || (expected === 'number' && t === 'integer'))) {
    add(path, `Invalid value: "${t}": ${path} in body must be of type ${expected}`);
    return out;
  }
  if (schema.enum && !schema.enum.includes(value)) {
    add(path, `Unsupported value: ${quote(value)}: supported values: ${schema.enum.map(quote).join(', ')}`);
  }
  if (typeof value === 'string') {
    if (schema.maxLength !== undefined && value.length > schema.maxLength)
      add(path, `Too long: may not be more than ${schema.maxLength} bytes`);
    if (schema.minLength !== undefined && value.length < schema.minLength)
      add(path, `Invalid value: ${quote(value)}: ${path} in body should be at least ${schema.minLength} chars long`);
    if (schema.pattern && !new RegExp(schema.pattern).test(value))
      add(path, `Invalid value: ${quote(value)}: ${path} in body should match '${schema.pattern}'`);
  }
  if (Array.isArray(value)) {
    if (schema.maxItems !== undefined && value.length > schema.maxItems)
      add(path, `Too many: ${value.length}: must have at most ${schema.maxItems} items`);
    const items = schema.items;
    if (items) for (const [i, v] of value.entries()) checkSchema(v, items, `${path}[${i}]`, out);
  } else if (t === 'object') {
    const obj = value as Record<string, unknown>;
    for (const r of schema.required ?? []) if (obj[r] === undefined) add(`${path}.${r}`, 'Required value');
    for (const [k, v] of Object.entries(obj)) {
      const child = schema.properties?.[k] ?? schema.additionalProperties;
      if (child) checkSchema(v, child, `${path}.${k}`, out);
    }
    if (schema.maxProperties !== undefined && Object.keys(obj).length > schema.maxProperties)
      add(path, `Too many: ${Object.keys(obj).length}: must have at most ${schema.maxProperties} items`);
  }
  for (const v of schema['x-kubernetes-validations'] ?? []) {
    const check = ruleCheck(v.rule);
    if (check && !check(value as Self))
      add(`${path}${v.fieldPath ?? ''}`, `Invalid value: "${t}": ${v.message ?? `failed rule: ${v.rule}`}`);
  }
  return out;
}

// The API server's own rules for metadata (its words, from Kubernetes' apimachinery validation).
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_SUBDOMAIN_TEXT =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const NAME_PART_TEXT =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const LABEL_VALUE_TEXT =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

function checkMetadata(meta: { name?: string; labels?: Record<string, string> }, out: Problem[]): void {
  const add = (field: string, message: string) => out.push({ field, text: `${field}: ${message}` });
  const name = meta.name ?? '';
  if (!name) add('metadata.name', 'Required value: name or generateName is required');
  else {
    if (name.length > 253) add('metadata.name', `Invalid value: ${quote(name)}: must be no more than 253 characters`);
    if (!DNS1123_SUBDOMAIN.test(name)) add('metadata.name', `Invalid value: ${quote(name)}: ${DNS1123_SUBDOMAIN_TEXT}`);
  }
  for (const [k, v] of Object.entries(meta.labels ?? {})) {
    const slash = k.lastIndexOf('/');
    const namePart = slash >= 0 ? k.slice(slash + 1) : k;
    const prefix = slash >= 0 ? k.slice(0, slash) : '';
    if (!NAME_PART.test(namePart)) add('metadata.labels', `Invalid value: ${quote(k)}: ${NAME_PART_TEXT}`);
    else if (namePart.length > 63) add('metadata.labels', `Invalid value: ${quote(k)}: name part must be no more than 63 characters`);
    if (slash >= 0 && !DNS1123_SUBDOMAIN.test(prefix))
      add('metadata.labels', `Invalid value: ${quote(k)}: prefix part ${DNS1123_SUBDOMAIN_TEXT}`);
    if (!LABEL_VALUE.test(v)) add('metadata.labels', `Invalid value: ${quote(v)}: ${LABEL_VALUE_TEXT}`);
    else if (v.length > 63) add('metadata.labels', `Invalid value: ${quote(v)}: must be no more than 63 characters`);
  }
}

/** Every problem the API server would find in this KataConfig that the form can find itself. */
export function checkKataConfig(
  kc: { metadata: { name?: string; labels?: Record<string, string> }; spec?: unknown },
  specSchema: OpenAPISchema,
): Problem[] {
  const out: Problem[] = [];
  checkMetadata(kc.metadata, out);
  checkSchema(kc.spec, specSchema, 'spec', out);
  return out;
}
