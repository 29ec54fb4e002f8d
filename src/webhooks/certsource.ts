/**
 * Where the admission webhook's serving certificate comes from, and what osc writes for each source
 * (docs/security.md, "Webhook certificates"). Pure apart from `discoverCertServices`.
 */
import type { KubeClient } from '../kube/client.ts';
import type { KubeObject } from '../kube/types.ts';
import { WEBHOOK_SECRET } from './setup.ts';

export const CERT_SOURCES = ['auto', 'service-ca', 'cert-manager', 'self-signed'] as const;
export type CertSourceFlag = (typeof CERT_SOURCES)[number];
export type CertSource = Exclude<CertSourceFlag, 'auto'>;

/** The Secret the serving certificate is read from, per source (each its own, so that none overwrites another's). */
export const CERT_SECRETS: Record<CertSource, string> = {
  'self-signed': WEBHOOK_SECRET,
  'service-ca': 'osc-webhook-service-ca-cert',
  'cert-manager': 'osc-webhook-cert-manager-cert',
};

/** OpenShift's service CA: issues the Secret named here for the annotated Service, and fills caBundle where asked. */
export const SERVICE_CA_SECRET_ANNOTATION = 'service.beta.openshift.io/serving-cert-secret-name';
export const SERVICE_CA_INJECT_ANNOTATION = 'service.beta.openshift.io/inject-cabundle';
/** cert-manager's CA injector: fills caBundle from the CA of the Certificate named `<namespace>/<name>`. */
export const CERT_MANAGER_INJECT_ANNOTATION = 'cert-manager.io/inject-ca-from';

export const CERT_MANAGER = {
  selfSignedIssuer: 'osc-selfsigned-issuer',
  caCertificate: 'osc-webhook-ca',
  caSecret: 'osc-webhook-ca',
  caIssuer: 'osc-webhook-ca-issuer',
  servingCertificate: 'osc-webhook-serving-cert',
} as const;

/** What the cluster offers, from API discovery. */
export interface CertServices {
  /** operator.openshift.io/v1 servicecas: OpenShift's service CA operator runs. */
  serviceCA: boolean;
  /** cert-manager.io/v1 certificates and issuers are served. */
  certManager: boolean;
}

/**
 * The source to use. An explicit choice wins. `auto` prefers the platform's own service: OpenShift's service
 * CA (always there on OpenShift), then cert-manager, else osc's own. Both platform services issue for the
 * Service's DNS name only, so an operator the API server reaches by URL (outside the cluster) uses its own.
 */
export function chooseCertSource(flag: CertSourceFlag, found: CertServices, byUrl: boolean): CertSource {
  if (flag !== 'auto') return flag;
  if (byUrl) return 'self-signed';
  if (found.serviceCA) return 'service-ca';
  if (found.certManager) return 'cert-manager';
  return 'self-signed';
}

async function serves(client: KubeClient, groupVersion: string, plurals: string[]): Promise<boolean> {
  try {
    const res = await client.request<{ resources?: { name: string }[] }>('GET', `/apis/${groupVersion}`);
    return plurals.every((p) => res.resources?.some((r) => r.name === p));
  } catch {
    return false;
  }
}

/** Asks API discovery which certificate services the cluster runs. */
export async function discoverCertServices(client: KubeClient): Promise<CertServices> {
  const [serviceCA, certManager] = await Promise.all([
    serves(client, 'operator.openshift.io/v1', ['servicecas']),
    serves(client, 'cert-manager.io/v1', ['certificates', 'issuers']),
  ]);
  return { serviceCA, certManager };
}

/** The annotations on both webhook configurations that have a platform injector fill in caBundle. */
export function injectAnnotations(source: CertSource, namespace: string): Record<string, string> | undefined {
  if (source === 'service-ca') return { [SERVICE_CA_INJECT_ANNOTATION]: 'true' };
  if (source === 'cert-manager') return { [CERT_MANAGER_INJECT_ANNOTATION]: `${namespace}/${CERT_MANAGER.servingCertificate}` };
  return undefined;
}

export const serviceDnsNames = (service: string, namespace: string): string[] => [
  `${service}.${namespace}.svc`,
  `${service}.${namespace}.svc.cluster.local`,
];

/**
 * cert-manager: a self-signed Issuer makes a CA, a CA Issuer signs the serving certificate with it. The
 * CA outlives many serving certificates, so cert-manager's renewals of the serving certificate never change
 * what the API server must trust (a self-signed serving certificate would: its renewal is a new CA, and
 * the API server would reject it until the CA injector caught up).
 */
export function certManagerObjects(namespace: string, service: string): KubeObject[] {
  const labels = { 'app.kubernetes.io/name': 'osc', 'app.kubernetes.io/component': 'webhook' };
  const meta = (name: string) => ({ name, namespace, labels });
  return [
    { apiVersion: 'cert-manager.io/v1', kind: 'Issuer', metadata: meta(CERT_MANAGER.selfSignedIssuer), spec: { selfSigned: {} } },
    {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: meta(CERT_MANAGER.caCertificate),
      spec: {
        isCA: true,
        commonName: 'osc-webhook-ca',
        secretName: CERT_MANAGER.caSecret,
        duration: '8760h',
        renewBefore: '2920h',
        privateKey: { algorithm: 'ECDSA', size: 256 },
        issuerRef: { kind: 'Issuer', name: CERT_MANAGER.selfSignedIssuer },
      },
    },
    {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Issuer',
      metadata: meta(CERT_MANAGER.caIssuer),
      spec: { ca: { secretName: CERT_MANAGER.caSecret } },
    },
    {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: meta(CERT_MANAGER.servingCertificate),
      spec: {
        secretName: CERT_SECRETS['cert-manager'],
        dnsNames: serviceDnsNames(service, namespace),
        duration: '2160h',
        renewBefore: '720h',
        privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' },
        usages: ['server auth', 'digital signature', 'key encipherment'],
        issuerRef: { kind: 'Issuer', name: CERT_MANAGER.caIssuer },
      },
    },
  ] as unknown as KubeObject[];
}
