/**
 * OpenShift's TLS security profiles (the `APIServer` named `cluster`, `spec.tlsSecurityProfile`) as Node TLS
 * server options. The profiles and their cipher lists are OpenShift's (config/v1 in openshift/api, after
 * Mozilla's server-side TLS guidelines); a cluster without the APIServer resource, or without a profile in
 * it, gets Intermediate, as OpenShift's own components do. As in OpenShift's Go servers, a Custom profile's
 * ciphers restrict TLS 1.2 and older; TLS 1.3 (allowed unless the minimum is above it) keeps its standard
 * suites when the list names none.
 */
import { createSecureContext, type SecureVersion } from 'node:tls';

import type { TLSProfileType, TLSSecurityProfile } from '../api/openshift.ts';

export type { TLSProfileType, TLSSecurityProfile };

/** What a server's secure context takes from the profile. */
export interface TLSServerOptions {
  /** The profile it came from, for the log. */
  profile: string;
  minVersion: SecureVersion;
  /** OpenSSL cipher names, TLS 1.3 suites included, colon-separated. */
  ciphers: string;
}

const TLS13 = ['TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256'];
const INTERMEDIATE = [
  ...TLS13,
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
  'DHE-RSA-AES128-GCM-SHA256',
  'DHE-RSA-AES256-GCM-SHA384',
];
const OLD = [
  ...INTERMEDIATE,
  'DHE-RSA-CHACHA20-POLY1305',
  'ECDHE-ECDSA-AES128-SHA256',
  'ECDHE-RSA-AES128-SHA256',
  'ECDHE-ECDSA-AES128-SHA',
  'ECDHE-RSA-AES128-SHA',
  'ECDHE-ECDSA-AES256-SHA384',
  'ECDHE-RSA-AES256-SHA384',
  'ECDHE-ECDSA-AES256-SHA',
  'ECDHE-RSA-AES256-SHA',
  'DHE-RSA-AES128-SHA256',
  'DHE-RSA-AES256-SHA256',
  'AES128-GCM-SHA256',
  'AES256-GCM-SHA384',
  'AES128-SHA256',
  'AES256-SHA256',
  'AES128-SHA',
  'AES256-SHA',
  'DES-CBC3-SHA',
];

const PROFILES: Record<Exclude<TLSProfileType, 'Custom'>, { minTLSVersion: string; ciphers: string[] }> = {
  Old: { minTLSVersion: 'VersionTLS10', ciphers: OLD },
  Intermediate: { minTLSVersion: 'VersionTLS12', ciphers: INTERMEDIATE },
  Modern: { minTLSVersion: 'VersionTLS13', ciphers: TLS13 },
};

const VERSIONS: Record<string, SecureVersion> = {
  VersionTLS10: 'TLSv1',
  VersionTLS11: 'TLSv1.1',
  VersionTLS12: 'TLSv1.2',
  VersionTLS13: 'TLSv1.3',
};

/**
 * IANA cipher names (as Go and some Custom profiles write them) to OpenSSL's. The TLS 1.3 suites have one
 * name in both.
 */
const IANA_TO_OPENSSL: Record<string, string> = {
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_DHE_RSA_WITH_AES_128_GCM_SHA256: 'DHE-RSA-AES128-GCM-SHA256',
  TLS_DHE_RSA_WITH_AES_256_GCM_SHA384: 'DHE-RSA-AES256-GCM-SHA384',
  TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'DHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: 'ECDHE-ECDSA-AES128-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: 'ECDHE-RSA-AES128-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384: 'ECDHE-ECDSA-AES256-SHA384',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384: 'ECDHE-RSA-AES256-SHA384',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_DHE_RSA_WITH_AES_128_CBC_SHA256: 'DHE-RSA-AES128-SHA256',
  TLS_DHE_RSA_WITH_AES_256_CBC_SHA256: 'DHE-RSA-AES256-SHA256',
  TLS_RSA_WITH_AES_128_GCM_SHA256: 'AES128-GCM-SHA256',
  TLS_RSA_WITH_AES_256_GCM_SHA384: 'AES256-GCM-SHA384',
  TLS_RSA_WITH_AES_128_CBC_SHA256: 'AES128-SHA256',
  TLS_RSA_WITH_AES_256_CBC_SHA256: 'AES256-SHA256',
  TLS_RSA_WITH_AES_128_CBC_SHA: 'AES128-SHA',
  TLS_RSA_WITH_AES_256_CBC_SHA: 'AES256-SHA',
  TLS_RSA_WITH_3DES_EDE_CBC_SHA: 'DES-CBC3-SHA',
};

/**
 * The server options for a profile. A Custom profile's cipher names may be OpenSSL's or IANA's; a version
 * or a profile type it does not know is an error naming the field (the caller keeps what it served).
 */
export function tlsServerOptions(profile: TLSSecurityProfile | undefined): TLSServerOptions {
  const type = profile?.type || 'Intermediate';
  let spec: { minTLSVersion?: string; ciphers?: string[] };
  if (type === 'Custom') {
    spec = profile?.custom ?? {};
    if (!spec.ciphers?.length) throw new Error('spec.tlsSecurityProfile.custom.ciphers: a Custom profile must list its ciphers');
  } else if (type in PROFILES) spec = PROFILES[type as keyof typeof PROFILES];
  else throw new Error(`spec.tlsSecurityProfile.type: unknown profile "${type}" (Old, Intermediate, Modern or Custom)`);
  const version = spec.minTLSVersion ?? 'VersionTLS12';
  const minVersion = VERSIONS[version];
  if (!minVersion) {
    throw new Error(
      `spec.tlsSecurityProfile.custom.minTLSVersion: unknown version "${version}" (VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13)`,
    );
  }
  const ciphers = (spec.ciphers ?? []).map((c) => IANA_TO_OPENSSL[c] ?? c).join(':');
  const refused = opensslRefuses(minVersion, ciphers);
  if (refused !== undefined) throw new Error(`spec.tlsSecurityProfile.custom.ciphers: OpenSSL accepts none of ${ciphers} (${refused})`);
  return { profile: type, minVersion, ciphers };
}

/**
 * Why OpenSSL refuses a version and cipher list (undefined if it takes them): it skips names it does
 * not know and refuses a list with none it knows. Asked once per list: a secure context costs OpenSSL a
 * tenth of a second or more, and every event of the cluster's APIServer (a resync, a watch renewed) would
 * otherwise make one again for the same profile.
 */
const refusals = new Map<string, string | undefined>();
function opensslRefuses(minVersion: SecureVersion, ciphers: string): string | undefined {
  const key = `${minVersion} ${ciphers}`;
  if (refusals.has(key)) return refusals.get(key);
  let refused: string | undefined;
  try {
    createSecureContext({ minVersion, ciphers });
  } catch (e) {
    refused = (e as Error).message;
  }
  if (refusals.size > 64) refusals.clear(); // a bound, for an APIServer edited again and again
  refusals.set(key, refused);
  return refused;
}

export const DEFAULT_TLS_OPTIONS: TLSServerOptions = tlsServerOptions(undefined);

/**
 * The TLS 1.2-and-older suites Go's crypto/tls implements, by their IANA names (what Go programs' flags and
 * variables take, e.g. the cloud-api-adaptor's TLS_CIPHER_SUITES): Go has no DHE suites and a few CBC ones
 * only. A name outside this list makes such a program refuse to start.
 */
const GO_TLS12_SUITES = new Set([
  'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256',
  'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256',
  'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384',
  'TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384',
  'TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256',
  'TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256',
  'TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA',
  'TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA',
  'TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA',
  'TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA',
  'TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256',
  'TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256',
  'TLS_RSA_WITH_AES_128_GCM_SHA256',
  'TLS_RSA_WITH_AES_256_GCM_SHA384',
  'TLS_RSA_WITH_AES_128_CBC_SHA',
  'TLS_RSA_WITH_AES_256_CBC_SHA',
  'TLS_RSA_WITH_AES_128_CBC_SHA256',
  'TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA',
  'TLS_RSA_WITH_3DES_EDE_CBC_SHA',
]);
const OPENSSL_TO_IANA = Object.fromEntries(Object.entries(IANA_TO_OPENSSL).map(([iana, openssl]) => [openssl, iana]));

/** A profile as a Go program takes it: the minimum version's name, and the TLS 1.2 suites Go has (IANA names, in order). */
export interface GoTLSProfile {
  profile: string;
  /** VersionTLS10 ... VersionTLS13, as the profile writes it. */
  minTLSVersion: string;
  cipherSuites: string[];
}

/**
 * The profile for a Go program: OpenShift's own components do the same translation (IANA names; the suites
 * Go lacks dropped; the TLS 1.3 suites, which Go does not let a program choose, left out). Throws as
 * tlsServerOptions does for a profile osc cannot read.
 */
export function goTLSProfile(profile: TLSSecurityProfile | undefined): GoTLSProfile {
  const checked = tlsServerOptions(profile);
  const type = checked.profile;
  const spec = type === 'Custom' ? (profile?.custom ?? {}) : PROFILES[type as keyof typeof PROFILES];
  const minTLSVersion = spec.minTLSVersion ?? 'VersionTLS12';
  const cipherSuites = [...new Set((spec.ciphers ?? []).map((c) => OPENSSL_TO_IANA[c] ?? c).filter((c) => GO_TLS12_SUITES.has(c)))];
  return { profile: type, minTLSVersion, cipherSuites };
}
