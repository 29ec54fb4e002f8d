/**
 * Certificate authorities and certificates (ECDSA P-256), as PEM. The operator issues its own webhook
 * and metrics serving certificates with these when no other source provides one; the dev cluster uses the
 * same functions for its control plane. Imported lazily by the operator: the X.509 library is loaded only
 * when a certificate must be made.
 */
// @peculiar/x509 resolves its ASN.1 types through tsyringe, which needs this polyfill loaded first.
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as never);

type CryptoKeyPair = webcrypto.CryptoKeyPair;
type CryptoKey = webcrypto.CryptoKey;

const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

export interface KeyPairPem {
  certPem: string;
  keyPem: string;
}

export interface CertificateAuthority extends KeyPairPem {
  cert: x509.X509Certificate;
  keys: CryptoKeyPair;
}

function pem(label: string, der: ArrayBuffer): string {
  const b64 = Buffer.from(der).toString('base64');
  return `-----BEGIN ${label}-----\n${b64.replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END ${label}-----\n`;
}

async function privateKeyPem(key: CryptoKey): Promise<string> {
  return pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', key));
}

const serial = (): string =>
  Buffer.from(webcrypto.getRandomValues(new Uint8Array(16)))
    .toString('hex')
    .replace(/^[89a-f]/, '1');

function validity(days: number): { notBefore: Date; notAfter: Date } {
  const lifetime = days * 24 * 60 * 60 * 1000;
  // Backdated to tolerate clock skew: an hour, or a tenth of a short lifetime (seconds-long ones in tests).
  const notBefore = new Date(Date.now() - Math.min(60 * 60 * 1000, Math.floor(lifetime / 10)));
  return { notBefore, notAfter: new Date(Date.now() + lifetime) };
}

export async function createCA(commonName: string, days = 365): Promise<CertificateAuthority> {
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${commonName}`,
    keys,
    signingAlgorithm: alg,
    ...validity(days),
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert, keys, certPem: cert.toString('pem'), keyPem: await privateKeyPem(keys.privateKey) };
}

export interface CertRequest {
  commonName: string;
  organizations?: string[];
  dnsNames?: string[];
  ipAddresses?: string[];
  usage: 'server' | 'client' | 'both';
  days?: number;
}

export async function issueCert(ca: CertificateAuthority, req: CertRequest): Promise<KeyPairPem> {
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as CryptoKeyPair;
  const subject = [`CN=${req.commonName}`, ...(req.organizations ?? []).map((o) => `O=${o}`)].join(', ');
  const ekus: string[] = [];
  if (req.usage !== 'client') ekus.push(x509.ExtendedKeyUsage.serverAuth);
  if (req.usage !== 'server') ekus.push(x509.ExtendedKeyUsage.clientAuth);
  const sans = [
    ...(req.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(req.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
    new x509.ExtendedKeyUsageExtension(ekus),
    await x509.AuthorityKeyIdentifierExtension.create(ca.cert),
  ];
  if (sans.length) extensions.push(new x509.SubjectAlternativeNameExtension(sans));
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject,
    issuer: ca.cert.subject,
    publicKey: keys.publicKey,
    signingKey: ca.keys.privateKey,
    signingAlgorithm: alg,
    ...validity(req.days ?? 365),
    extensions,
  });
  return { certPem: cert.toString('pem'), keyPem: await privateKeyPem(keys.privateKey) };
}

/** A bare key pair (the service-account token signing key): PKCS#8 private, SPKI public. */
export async function createSigningKey(): Promise<{ privatePem: string; publicPem: string }> {
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as CryptoKeyPair;
  return {
    privatePem: await privateKeyPem(keys.privateKey),
    publicPem: pem('PUBLIC KEY', await webcrypto.subtle.exportKey('spki', keys.publicKey)),
  };
}
