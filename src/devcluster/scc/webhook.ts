import type { Logger } from 'pino';
import {
  type SecurityContextConstraints,
  SecurityContextConstraintsType,
  VALIDATED_SCC_ANNOTATION,
  VALIDATED_SCC_SUBJECT_ANNOTATION,
} from '../../api/scc.ts';
import type { KubeClient } from '../../kube/client.ts';
import { errorMessage } from '../../kube/errors.ts';
import { createCA, issueCert } from '../../kube/pki.ts';
import { MutatingWebhookConfigurations, type Namespace, Namespaces } from '../../kube/resources.ts';
import type { KubeObject } from '../../kube/types.ts';
import { Informer } from '../../runtime/informer.ts';
import type { AdmissionRequest, Decision, JSONPatchOp } from '../../webhooks/admission.ts';
import { WebhookServer } from '../../webhooks/server.ts';
import { type Authorize, admitPod, type UserInfo } from './admission.ts';
import { NamespaceAllocator } from './namespaces.ts';
import type { AdmittedPod } from './provider.ts';

/** The webhook configuration and webhook that stand for OpenShift's built-in SCC admission plugin. */
export const SCC_WEBHOOK_CONFIGURATION = 'osc-dev-scc-admission';
export const SCC_WEBHOOK = 'scc-admission.security.openshift.io';
const PATH = '/admit-pod';

/**
 * How long a "may use" answer is reused. Pods of one workload arrive in bursts (a DaemonSet on a thousand
 * nodes) with the same requester and ServiceAccount; a grant made or removed shows within this time.
 */
export const AUTHORIZATION_TTL_MS = 2_000;

type ReviewRequest = AdmissionRequest<AdmittedPod> & { userInfo?: { username?: string; groups?: string[] } };

/**
 * SCC admission for the dev cluster: a mutating webhook (failurePolicy Fail) served by the dev cluster
 * process for every pod creation, with OpenShift's SCCs and namespace allocation (docs/devcluster.md).
 * Namespaces labelled `openshift.io/run-level` 0 or 1 are exempt, as on OpenShift.
 */
export class SccAdmission {
  private readonly sccs: Informer<SecurityContextConstraints>;
  private readonly namespaces: Informer<Namespace>;
  private readonly allocator: NamespaceAllocator;
  private readonly server: WebhookServer;
  private readonly decisions = new Map<string, { allowed: boolean; at: number } | Promise<boolean>>();
  /** Pods admitted and refused, for tests and the log. */
  readonly stats = { admitted: 0, refused: 0, accessReviews: 0 };

  private readonly client: KubeClient;
  private readonly log: Logger;

  constructor(client: KubeClient, log: Logger) {
    this.client = client;
    this.log = log;
    this.sccs = new Informer(client, SecurityContextConstraintsType, { log });
    this.namespaces = new Informer(client, Namespaces, { log });
    this.allocator = new NamespaceAllocator(client, this.namespaces, log);
    this.server = new WebhookServer(log.child({ component: 'scc-admission' }));
    this.server.handle(PATH, (req) => this.review(req as ReviewRequest));
  }

  async start(signal: AbortSignal): Promise<void> {
    void this.sccs.run(signal);
    void this.namespaces.run(signal);
    await Promise.all([this.sccs.waitForSync(signal), this.namespaces.waitForSync(signal)]);
    const ca = await createCA('osc-dev-scc-admission');
    const cert = await issueCert(ca, { commonName: 'scc-admission', usage: 'server', ipAddresses: ['127.0.0.1'] });
    const port = await this.server.listen('127.0.0.1:0', cert);
    await this.client.apply(MutatingWebhookConfigurations, registration(`https://127.0.0.1:${port}${PATH}`, ca.certPem), {
      fieldManager: 'osc-devcluster',
    });
  }

  async stop(): Promise<void> {
    await this.server.close();
  }

  private async review(req: ReviewRequest): Promise<Decision> {
    const pod = req.object;
    const namespace = req.namespace ?? '';
    if (req.operation !== 'CREATE' || !pod || req.resource.resource !== 'pods' || (req as { subResource?: string }).subResource)
      return { allowed: true };
    const user: UserInfo = { username: req.userInfo?.username ?? '', groups: req.userInfo?.groups ?? [] };
    let namespaceAnnotations: Record<string, string | undefined>;
    try {
      namespaceAnnotations = await this.allocator.annotations(namespace);
    } catch (e) {
      return { allowed: false, code: 403, reason: 'Forbidden', message: `error fetching namespace "${namespace}": ${errorMessage(e)}` };
    }
    const verdict = await admitPod({ pod, namespace, namespaceAnnotations, sccs: this.sccs.list(), user, authorize: this.authorize });
    if (!verdict.allowed) {
      this.stats.refused++;
      this.log.debug({ namespace, pod: pod.metadata.name ?? pod.metadata.generateName, user: user.username }, verdict.message);
      return { allowed: false, code: 403, reason: 'Forbidden', message: verdict.message };
    }
    this.stats.admitted++;
    const annotated: AdmittedPod = {
      ...verdict.pod,
      metadata: {
        ...verdict.pod.metadata,
        annotations: {
          ...verdict.pod.metadata.annotations,
          [VALIDATED_SCC_ANNOTATION]: verdict.scc,
          [VALIDATED_SCC_SUBJECT_ANNOTATION]: verdict.subject,
        },
      },
    };
    return { allowed: true, patch: podPatch(pod, annotated) };
  }

  /** RBAC `use` on one SCC, asked of the API server (SubjectAccessReview), the answer kept briefly. */
  private readonly authorize: Authorize = (who, scc, namespace) => {
    const key = `${who.username}\n${who.groups.join(',')}\n${namespace}\n${scc}`;
    const cached = this.decisions.get(key);
    if (cached instanceof Promise) return cached;
    if (cached && performance.now() - cached.at < AUTHORIZATION_TTL_MS) return Promise.resolve(cached.allowed);
    const asked = this.accessReview(who, scc, namespace).then(
      (allowed) => {
        this.decisions.set(key, { allowed, at: performance.now() });
        if (this.decisions.size > 10_000) this.decisions.clear();
        return allowed;
      },
      (e) => {
        this.decisions.delete(key);
        throw e;
      },
    );
    this.decisions.set(key, asked);
    return asked;
  };

  private async accessReview(who: UserInfo, scc: string, namespace: string): Promise<boolean> {
    this.stats.accessReviews++;
    const r = await this.client.request<{ status?: { allowed?: boolean } }>('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: who.username,
          groups: who.groups,
          resourceAttributes: { namespace, verb: 'use', group: 'security.openshift.io', resource: 'securitycontextconstraints', name: scc },
        },
      },
    });
    return r.status?.allowed === true;
  }
}

function registration(url: string, caPem: string): KubeObject {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: SCC_WEBHOOK_CONFIGURATION, labels: { 'osc.dev/simulated-openshift-admission': 'true' } },
    webhooks: [
      {
        name: SCC_WEBHOOK,
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        failurePolicy: 'Fail',
        reinvocationPolicy: 'Never',
        timeoutSeconds: 10,
        clientConfig: { url, caBundle: Buffer.from(caPem).toString('base64') },
        rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'], scope: 'Namespaced' }],
        namespaceSelector: { matchExpressions: [{ key: 'openshift.io/run-level', operator: 'NotIn', values: ['0', '1'] }] },
      },
    ],
  } as KubeObject;
}

const pointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The JSON patch from the pod as sent to the pod as admitted: security contexts and annotations only. */
export function podPatch(before: AdmittedPod, after: AdmittedPod): JSONPatchOp[] {
  const ops: JSONPatchOp[] = [];
  const annotations = after.metadata.annotations ?? {};
  if (!before.metadata.annotations) ops.push({ op: 'add', path: '/metadata/annotations', value: annotations });
  else
    for (const [k, v] of Object.entries(annotations))
      if (before.metadata.annotations[k] !== v) ops.push({ op: 'add', path: `/metadata/annotations/${pointer(k)}`, value: v });
  if (!same(before.spec.securityContext, after.spec.securityContext))
    ops.push({ op: 'add', path: '/spec/securityContext', value: after.spec.securityContext });
  for (const field of ['initContainers', 'containers'] as const)
    (after.spec[field] ?? []).forEach((c, i) => {
      if (!same(before.spec[field]?.[i]?.securityContext, c.securityContext))
        ops.push({ op: 'add', path: `/spec/${field}/${i}/securityContext`, value: c.securityContext });
    });
  return ops;
}
