/**
 * Initdata, pure: build a document from its parts, encode it (TOML text, gzip, base64), decode and check a
 * value layer by layer, and compute the reference value an attestation service compares with the TEE's
 * evidence (docs/peerpods.md, "Initdata"). The vocabulary and the error texts are in src/api/initdata.ts.
 *
 * The checks are the guest's own: it refuses a value that is not standard base64 of gzip, a document that
 * is not TOML, a version other than 0.1.0 and an algorithm other than sha256/sha384/sha512. Checking the
 * three documents' syntax as well (and the policy as `osc policy check` does) moves the failure from a pod
 * VM that never starts to the moment the administrator writes the value.
 */
import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { parse, stringify, TomlError } from 'smol-toml';
import {
  INITDATA_ALGORITHMS,
  INITDATA_DOCUMENTS,
  INITDATA_TEXT,
  INITDATA_VERSION,
  type InitdataAlgorithm,
  type InitdataLayer,
  MAX_INITDATA_ENCODED_BYTES,
  MAX_INITDATA_TOML_BYTES,
} from '../api/initdata.ts';
import { checkPolicy } from './policy.ts';

export class InitdataError extends Error {
  readonly layer: InitdataLayer;
  constructor(layer: InitdataLayer, message: string) {
    super(message);
    this.layer = layer;
  }
}

export interface Initdata {
  /** The document exactly as decoded: its bytes are what the reference value is the digest of. */
  toml: string;
  version: string;
  algorithm: InitdataAlgorithm;
  data: Record<string, string>;
  /** Not errors: entries the guest does not read. */
  warnings: string[];
}

/** gzip, then base64 (no line breaks), as the guest decodes it. Node's gzip writes no time stamp, so the same text gives the same value. */
export function encodeInitdata(toml: string): string {
  return gzipSync(Buffer.from(toml, 'utf8')).toString('base64');
}

/** The TOML text of an initdata value, without checking the document. */
export function decodeInitdataText(value: string): string {
  if (value.trim() === '') throw new InitdataError('value', INITDATA_TEXT.empty);
  if (looksLikeToml(value)) throw new InitdataError('base64', INITDATA_TEXT.plainToml);
  const size = Buffer.byteLength(value, 'utf8');
  if (size > MAX_INITDATA_ENCODED_BYTES) throw new InitdataError('size', INITDATA_TEXT.tooLarge(size));
  if (/\s/.test(value)) throw new InitdataError('base64', INITDATA_TEXT.lineBreaks);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value) || value.length % 4 !== 0) throw new InitdataError('base64', INITDATA_TEXT.notBase64);
  const bytes = Buffer.from(value, 'base64');
  if (bytes.length < 2 || bytes[0] !== 0x1f || bytes[1] !== 0x8b) {
    const text = utf8(bytes);
    if (text !== undefined && looksLikeToml(text)) {
      throw new InitdataError('gzip', INITDATA_TEXT.base64OfPlainText);
    }
    throw new InitdataError('gzip', INITDATA_TEXT.notGzip);
  }
  let inflated: Buffer;
  try {
    inflated = gunzipSync(bytes, { maxOutputLength: MAX_INITDATA_TOML_BYTES });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw new InitdataError('gzip', INITDATA_TEXT.inflatesTooMuch);
    throw new InitdataError('gzip', INITDATA_TEXT.badGzip((e as Error).message));
  }
  const text = utf8(inflated);
  if (text === undefined) throw new InitdataError('utf-8', INITDATA_TEXT.notUtf8);
  return text;
}

/** An initdata document's own lines, which base64 or gzip never start a line with. */
function looksLikeToml(text: string): boolean {
  return /^\s*(version\s*=|algorithm\s*=|\[data\])/m.test(text);
}

function utf8(bytes: Buffer): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** Reads and checks an initdata value; throws InitdataError naming the first layer at fault. */
export function decodeInitdata(value: string): Initdata {
  return parseInitdata(decodeInitdataText(value));
}

/** Checks an initdata document (the TOML text, not encoded). */
export function parseInitdata(toml: string): Initdata {
  const doc = parseToml(toml, (line, column, why) => new InitdataError('toml', INITDATA_TEXT.notToml(line, column, why)));
  const version = doc.version;
  if (version === undefined) throw new InitdataError('version', INITDATA_TEXT.missing('version', `version = "${INITDATA_VERSION}"`));
  if (typeof version !== 'string')
    throw new InitdataError('version', INITDATA_TEXT.notString('version', `version = "${INITDATA_VERSION}"`));
  if (version !== INITDATA_VERSION) throw new InitdataError('version', INITDATA_TEXT.version(version));
  const algorithm = doc.algorithm;
  if (algorithm === undefined) throw new InitdataError('algorithm', INITDATA_TEXT.missing('algorithm', 'algorithm = "sha384"'));
  if (typeof algorithm !== 'string') throw new InitdataError('algorithm', INITDATA_TEXT.notString('algorithm', 'algorithm = "sha384"'));
  if (!(INITDATA_ALGORITHMS as readonly string[]).includes(algorithm))
    throw new InitdataError('algorithm', INITDATA_TEXT.algorithm(algorithm));
  const table = doc.data;
  if (table === undefined)
    throw new InitdataError(
      'shape',
      INITDATA_TEXT.missing('[data] section', 'a [data] section holding "aa.toml", "cdh.toml" and "policy.rego"'),
    );
  if (typeof table !== 'object' || table === null || Array.isArray(table) || table instanceof Date) {
    throw new InitdataError('shape', INITDATA_TEXT.dataNotTable);
  }
  const data: Record<string, string> = {};
  for (const [name, entry] of Object.entries(table)) {
    if (typeof entry !== 'string') throw new InitdataError('data', INITDATA_TEXT.entryNotString(name));
    data[name] = entry;
  }
  const warnings: string[] = [];
  const documents = INITDATA_DOCUMENTS.filter((d) => d in data);
  if (documents.length === 0) throw new InitdataError('data', INITDATA_TEXT.noDocuments);
  for (const name of Object.keys(data)) {
    if (!(INITDATA_DOCUMENTS as readonly string[]).includes(name)) warnings.push(INITDATA_TEXT.unusedEntry(name));
  }
  for (const name of ['aa.toml', 'cdh.toml'] as const) {
    const text = data[name];
    if (text === undefined) continue;
    parseToml(text, (line, column, why) => new InitdataError(name, INITDATA_TEXT.documentNotToml(name, line, column, why)));
  }
  const policy = data['policy.rego'];
  if (policy !== undefined) {
    const check = checkPolicy(policy);
    if (!check.ok) throw new InitdataError('policy.rego', INITDATA_TEXT.policyRefused(check.problems));
  }
  return { toml, version, algorithm: algorithm as InitdataAlgorithm, data, warnings };
}

function parseToml(text: string, error: (line: number, column: number, why: string) => InitdataError): Record<string, unknown> {
  try {
    return parse(text) as Record<string, unknown>;
  } catch (e) {
    if (!(e instanceof TomlError)) throw e;
    // smol-toml's message is "Invalid TOML document: <why>" followed by a code frame; the why is enough.
    const why = e.message.split('\n')[0]?.replace(/^Invalid TOML document:\s*/, '') ?? e.message;
    throw error(e.line, e.column, why);
  }
}

export interface InitdataParts {
  algorithm: InitdataAlgorithm;
  /** The documents by name (aa.toml, cdh.toml, policy.rego); absent ones are left out. */
  documents: Partial<Record<(typeof INITDATA_DOCUMENTS)[number], string>>;
}

/**
 * The TOML text of an initdata document. Each document is written as a multi-line literal string, as the
 * product documentation's example does, so that it reads like the file it came from; a document that
 * cannot be one (it contains ''' or control characters) is written as a quoted string instead.
 */
export function buildInitdataToml(parts: InitdataParts): string {
  const lines = [`algorithm = "${parts.algorithm}"`, `version = "${INITDATA_VERSION}"`, '', '[data]'];
  for (const name of INITDATA_DOCUMENTS) {
    const text = parts.documents[name];
    if (text === undefined) continue;
    const literal = !text.includes("'''") && !text.endsWith("'") && !hasControlCharacter(text);
    if (literal) lines.push(`"${name}" = '''\n${text}'''`);
    else lines.push(stringify({ [name]: text }).trimEnd());
  }
  return `${lines.join('\n')}\n`;
}

/** Whether the text has a character a TOML literal string cannot hold (a control character other than tab and line feed). */
function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a) || c === 0x7f) return true;
  }
  return false;
}

/** Builds, checks and encodes an initdata value from its documents. */
export function buildInitdata(parts: InitdataParts): { toml: string; value: string; initdata: Initdata } {
  const toml = buildInitdataToml(parts);
  const value = encodeInitdata(toml);
  return { toml, value, initdata: decodeInitdata(value) };
}

/** How each TEE carries the initdata digest in its evidence, and so the form of the reference value. */
export interface InitdataReferenceValues {
  algorithm: InitdataAlgorithm;
  /** The digest of the document's bytes with its own algorithm, hex. */
  digest: string;
  /** Intel TDX: MRCONFIGID, 48 bytes: the digest zero-padded (sha256) or cut (sha512) to 48 bytes, hex. */
  tdxMrConfigId: string;
  /** AMD SEV-SNP: HOST_DATA, 32 bytes: the digest cut to 32 bytes, hex. */
  snpHostData: string;
  /** A vTPM (Azure confidential VMs): PCR 8 after one extend with the document's sha256, from all zeros, hex. */
  vtpmPcr8: string;
}

/** The digest of the bytes exactly as decoded: re-serialising the document would change them. */
export function initdataReferenceValues(initdata: Pick<Initdata, 'toml' | 'algorithm'>): InitdataReferenceValues {
  const bytes = Buffer.from(initdata.toml, 'utf8');
  const digest = createHash(initdata.algorithm).update(bytes).digest();
  const fit = (len: number) => {
    const out = Buffer.alloc(len);
    digest.copy(out, 0, 0, Math.min(len, digest.length));
    return out.toString('hex');
  };
  const sha256 = createHash('sha256').update(bytes).digest();
  const pcr8 = createHash('sha256')
    .update(Buffer.concat([Buffer.alloc(32), sha256]))
    .digest('hex');
  return { algorithm: initdata.algorithm, digest: digest.toString('hex'), tdxMrConfigId: fit(48), snpHostData: fit(32), vtpmPcr8: pcr8 };
}
