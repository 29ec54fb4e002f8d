/**
 * Initdata's vocabulary: where it is written, the format the guest accepts, its size limit, and the texts
 * of the errors that refuse a malformed value (docs/peerpods.md, "Initdata").
 *
 * Initdata is a TOML document (`version`, `algorithm`, and a `[data]` table of named documents) that the
 * pod VM's guest components read at start: the attestation agent's `aa.toml`, the confidential data hub's
 * `cdh.toml` and the Kata Agent's `policy.rego`. It travels gzipped, then base64-encoded.
 */

import { PEER_PODS_CM } from './names.ts';

/** The peer-pods-cm key holding the initdata every peer pod gets unless it carries its own. */
export const INITDATA_KEY = 'INITDATA';
/** The pod annotation holding one pod's initdata; it wins over INITDATA. */
export const INITDATA_ANNOTATION = 'io.katacontainers.config.hypervisor.cc_init_data';
/**
 * The peer-pods-cm key of osc's own default initdata: when set, the pod webhook writes it into the
 * annotation of every kata-remote pod created without one. osc reads it, the cloud-api-adaptor does not, so
 * changing it restarts no adaptor (docs/peerpods.md, "Initdata").
 */
export const DEFAULT_POD_INITDATA_KEY = 'DEFAULT_POD_INITDATA';
/** The only version the guest components accept. */
export const INITDATA_VERSION = '0.1.0';
export const INITDATA_ALGORITHMS = ['sha256', 'sha384', 'sha512'] as const;
export type InitdataAlgorithm = (typeof INITDATA_ALGORITHMS)[number];
/** The algorithm of the product documentation's example. */
export const DEFAULT_INITDATA_ALGORITHM: InitdataAlgorithm = 'sha384';
/** The `[data]` entries the guest reads; other entries are carried but unused. */
export const INITDATA_DOCUMENTS = ['aa.toml', 'cdh.toml', 'policy.rego'] as const;

/**
 * The largest encoded value accepted: 16 KiB. The cloud-api-adaptor hands initdata to the pod VM in its
 * user data, and an AWS instance's user data holds at most 16 KB; the 256 KiB of a pod's annotations and
 * the 1 MiB of a ConfigMap are far larger, so the user data is the limit that bites.
 */
export const MAX_INITDATA_ENCODED_BYTES = 16 * 1024;
/** The most a value may decompress to: a guard against a small value that inflates without end. */
export const MAX_INITDATA_TOML_BYTES = 1024 * 1024;

/** The layer of an initdata value a problem is in, outermost first. */
export type InitdataLayer =
  | 'value'
  | 'size'
  | 'base64'
  | 'gzip'
  | 'utf-8'
  | 'toml'
  | 'shape'
  | 'version'
  | 'algorithm'
  | 'data'
  | 'aa.toml'
  | 'cdh.toml'
  | 'policy.rego';

const REBUILD = 'build it with osc initdata build';
const ENCODE = 'encode the TOML file with gzip -c initdata.toml | base64 -w0';

export const INITDATA_TEXT = {
  empty: `the initdata is empty: remove the setting, or set it to a gzipped, base64-encoded initdata document (${REBUILD})`,
  tooLarge: (bytes: number) =>
    `the initdata is ${bytes} bytes encoded, over the ${MAX_INITDATA_ENCODED_BYTES}-byte limit (the pod VM's user data on AWS holds at most 16 KB): shorten the documents, for example the policy`,
  plainToml: `the initdata is plain TOML, not gzipped and base64-encoded: ${ENCODE} (or ${REBUILD})`,
  lineBreaks: 'the initdata has line breaks or spaces in its base64, which the guest refuses: encode it with base64 -w0 (no wrapping)',
  notBase64: `the initdata is not base64 (characters outside A-Z a-z 0-9 + / =, or a length that is not a multiple of 4): ${ENCODE}`,
  base64OfPlainText: `the initdata is base64 of text, not of gzip: gzip it before encoding (${ENCODE})`,
  notGzip: `the initdata's base64 does not decode to gzip data: ${ENCODE}`,
  badGzip: (why: string) => `the initdata's gzip data is damaged (${why}): encode the TOML file again (${ENCODE})`,
  inflatesTooMuch: `the initdata decompresses to more than ${MAX_INITDATA_TOML_BYTES} bytes: it is not an initdata document; ${REBUILD}`,
  notUtf8: 'the initdata document is not UTF-8 text: save initdata.toml as UTF-8 and encode it again',
  notToml: (line: number, column: number, why: string) =>
    `the initdata document is not valid TOML (line ${line}, column ${column}: ${why}): fix initdata.toml and encode it again`,
  missing: (key: string, hint: string) => `the initdata document has no ${key}: add ${hint}`,
  notString: (key: string, hint: string) => `the initdata document's ${key} is not a string: write ${hint}`,
  dataNotTable: '[data] in the initdata document is not a table: write it as a [data] section of named documents',
  version: (v: string) =>
    `the initdata version is "${v}": the guest accepts only "${INITDATA_VERSION}"; set version = "${INITDATA_VERSION}"`,
  algorithm: (a: string) => {
    const lower = a.toLowerCase().replace(/-/g, '');
    const fix = (INITDATA_ALGORITHMS as readonly string[]).includes(lower)
      ? `write it in lower case, algorithm = "${lower}"`
      : `set it to one of ${INITDATA_ALGORITHMS.join(', ')} (the documentation uses "${DEFAULT_INITDATA_ALGORITHM}")`;
    return `the initdata algorithm is "${a}": it is not a supported hash algorithm; ${fix}`;
  },
  entryNotString: (name: string) => `[data] entry "${name}" is not a string: write the whole document as one string, between ''' and '''`,
  noDocuments: `[data] has none of ${INITDATA_DOCUMENTS.join(', ')}: the guest would start unconfigured; add at least one`,
  unusedEntry: (name: string) => `[data] entry "${name}" is not read by the guest (it reads ${INITDATA_DOCUMENTS.join(', ')})`,
  documentNotToml: (name: string, line: number, column: number, why: string) =>
    `[data] "${name}" is not valid TOML (line ${line}, column ${column} of ${name}: ${why}): fix ${name}`,
  policyRefused: (problems: string[]) =>
    `[data] "policy.rego" is refused by osc policy check: ${problems.join('; ')}; fix the policy (start from osc policy hardened)`,
} as const;

/** What the pod webhook says about the default initdata (DEFAULT_POD_INITDATA) it injects. */
export const DEFAULT_INITDATA_TEXT = {
  /** A kata-remote pod without its own initdata while the default is malformed: refused (fail closed). */
  refused: (problem: string) =>
    `the pod has no annotation ${INITDATA_ANNOTATION} and the default initdata to give it, ${DEFAULT_POD_INITDATA_KEY} in ConfigMap ${PEER_PODS_CM}, is malformed (${problem}): ` +
    `fix ${DEFAULT_POD_INITDATA_KEY} (see the PeerPodsConfigValid condition), remove it to stop injecting a default, or give the pod its own ${INITDATA_ANNOTATION}`,
  /** The warning on an admitted pod that got the default. */
  injected: `annotation ${INITDATA_ANNOTATION} set from ${DEFAULT_POD_INITDATA_KEY} in ConfigMap ${PEER_PODS_CM} (the pod had none)`,
} as const;
