/**
 * A small schema builder: each definition is both an OpenAPI v3 schema (for a CRD, so the API server
 * validates) and a TypeScript type (via Infer<>), so the two cannot drift apart.
 */

export interface OpenAPISchema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  description?: string;
  properties?: Record<string, OpenAPISchema>;
  required?: string[];
  items?: OpenAPISchema;
  additionalProperties?: OpenAPISchema;
  enum?: unknown[];
  default?: unknown;
  pattern?: string;
  maxLength?: number;
  minLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
  format?: string;
  nullable?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-validations'?: { rule: string; message?: string; messageExpression?: string; fieldPath?: string; reason?: string }[];
  'x-kubernetes-map-type'?: 'atomic' | 'granular';
}

/** A schema node that remembers the TypeScript type it describes in a phantom field. */
export interface Schema<T> {
  readonly openapi: OpenAPISchema;
  readonly _t?: T;
}

export type Infer<S> = S extends Schema<infer T> ? T : never;

export type Extra = Omit<OpenAPISchema, 'type' | 'properties' | 'items' | 'additionalProperties' | 'enum' | 'required'>;

const node = <T>(openapi: OpenAPISchema): Schema<T> => ({ openapi });

export const s = {
  string: (extra: Extra = {}): Schema<string> => node({ type: 'string', ...extra }),
  enum: <const V extends readonly string[]>(values: V, extra: Extra = {}): Schema<V[number]> =>
    node({ type: 'string', enum: [...values], ...extra }),
  boolean: (extra: Extra = {}): Schema<boolean> => node({ type: 'boolean', ...extra }),
  integer: (extra: Extra = {}): Schema<number> => node({ type: 'integer', ...extra }),
  array: <T>(items: Schema<T>, extra: Extra = {}): Schema<T[]> => node({ type: 'array', items: items.openapi, ...extra }),
  map: <T>(values: Schema<T>, extra: Extra = {}): Schema<Record<string, T>> =>
    node({ type: 'object', additionalProperties: values.openapi, ...extra }),
  object: <P extends Record<string, Schema<unknown>>, const R extends readonly (keyof P & string)[] = []>(
    props: P,
    opts: Extra & { required?: R } = {},
  ): Schema<ObjectOf<P, R[number]>> => {
    const { required, ...extra } = opts;
    const properties: Record<string, OpenAPISchema> = {};
    for (const [k, v] of Object.entries(props)) properties[k] = v.openapi;
    return node({ type: 'object', properties, ...(required?.length ? { required: [...required] } : {}), ...extra });
  },
  /** Anything goes below this point (kept as-is by the API server). */
  any: <T = Record<string, unknown>>(extra: Extra = {}): Schema<T> =>
    node({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true, ...extra }),
};

type ObjectOf<P extends Record<string, Schema<unknown>>, R extends string> = Flatten<
  { [K in keyof P as K extends R ? K : never]: Infer<P[K]> } & { [K in keyof P as K extends R ? never : K]?: Infer<P[K]> }
>;
type Flatten<T> = { [K in keyof T]: T[K] };
