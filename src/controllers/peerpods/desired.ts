import type { KataConfigStatus } from '../../api/kataconfig.ts';
import {
  CONFIG_VALID,
  IMAGE_CONDITIONS,
  IMAGE_JOB_COMPLETED,
  IMAGE_JOB_FAILED,
  IMAGE_JOB_RUNNING,
  PEERPODS_CONDITIONS,
} from '../../api/kataconfig.ts';
import {
  CAA_IMAGE_ENV,
  DEFAULT_PEER_PODS_IMAGES,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  PEER_POD_CONFIG,
  PEER_PODS_CM,
  PEER_PODS_SECRET,
  type PeerPodsImages,
  PODVM_BUILDER_IMAGE_ENV,
  PODVM_IMAGE_CREATION_JOB,
  PODVM_IMAGE_DELETION_JOB,
} from '../../api/names.ts';
import type { PeerPodConfig } from '../../api/peerpodconfig.ts';
import { KEEP_IMAGE_ANNOTATION, peerPodsMessages, peerPodsReasons } from '../../api/peerpods-conditions.ts';
import { PODVM_IMAGE_SCC, PODVM_IMAGE_SERVICE_ACCOUNT, REQUIRED_SCC_ANNOTATION } from '../../api/scc.ts';
import type { ConfigMap, Job, Node, Secret } from '../../kube/resources.ts';
import type { Condition, OwnerReference } from '../../kube/types.ts';
import { defaultCloud } from '../../peerpods/clouds/index.ts';
import type { CloudImage } from '../../peerpods/clouds/provider.ts';
import { formatProblems, type PeerPodsValidation } from '../../peerpods/config.ts';
import { type CredentialsWiring, credentialsWiring } from '../../peerpods/credentials.ts';
import { matchesSelector } from '../../platform/platform.ts';
import type { ConditionInput } from '../../runtime/conditions.ts';
import type { StatusShare } from '../../runtime/status.ts';
import { CONFIG_HASH_ANNOTATION, digest, type KataNodePlacement, sortedEntries } from './adaptor.ts';

/**
 * Pure computations of the peer pods controller: the objects it wants, and what its conditions say. Nothing
 * here reads a Secret's values except configHash, which only digests them.
 */

/** The finalizer that keeps a KataConfig until the peer-pod parts are gone (image deleted first). */
export const PEERPODS_FINALIZER = 'kataconfiguration.openshift.io/peerpods-finalizer';

/** Annotations and labels osc puts on what it creates (prefix of the KataConfig API group). */
const P = 'peerpods.kataconfiguration.openshift.io';
/** On the PeerPodConfig: the PEERPODS_LIMIT_PER_NODE its limit was last taken from. */
export const LIMIT_FROM_CM_ANNOTATION = `${P}/limit-from-configmap`;
/** On peer-pods-cm: the AMI the operator's image job built (only that image is deleted on uninstall). */
export const IMAGE_ID_ANNOTATION = `${P}/podvm-image-id`;
/** On a deletion job: the AMI it deletes. */
export const DELETES_IMAGE_ANNOTATION = `${P}/deletes-image`;
/** On a deletion job: the peer-pods-cm and peer-pods-secret versions it ran with (a failed one is retried once they change). */
export const DELETION_INPUTS_ANNOTATION = `${P}/inputs`;
/**
 * On the KataConfig, "true": keep the pod VM image osc built when peer pods are removed (no deletion job,
 * or none retried), and let the removal finish. See docs/kataconfig.md.
 */
export { KEEP_IMAGE_ANNOTATION };

/** The versions of the inputs an image deletion job runs with, to tell when a failed one is worth retrying. */
export const deletionInputs = (cm: ConfigMap | undefined, secret: Secret | undefined): string =>
  `${cm?.metadata.resourceVersion ?? ''}/${secret?.metadata.resourceVersion ?? ''}`;

/**
 * A failed deletion job is retried once its cause may have been cleared: peer-pods-cm or peer-pods-secret
 * changed since it ran (a job without the annotation predates this rule and is retried once).
 */
export const deletionRetryDue = (job: Job, cm: ConfigMap | undefined, secret: Secret | undefined): boolean =>
  job.metadata.annotations?.[DELETION_INPUTS_ANNOTATION] !== deletionInputs(cm, secret);

export const COMPONENT_LABEL = 'app.kubernetes.io/component';
export { MANAGED_BY, MANAGED_BY_LABEL };
export const IMAGE_JOB_COMPONENT = 'podvm-image';
/** The label selector that finds osc's image jobs. */
export const IMAGE_JOB_SELECTOR = `${COMPONENT_LABEL}=${IMAGE_JOB_COMPONENT},${MANAGED_BY_LABEL}=${MANAGED_BY}`;

export {
  adaptorConfigHash,
  CAA_APP_LABEL,
  CONFIG_HASH_ANNOTATION,
  desiredDaemonSet,
  type KataNodePlacement,
  SPEC_HASH_ANNOTATION,
} from './adaptor.ts';
export type { PeerPodsImages };
/** The product's images (src/api/names.ts). */
export const DEFAULT_IMAGES: PeerPodsImages = DEFAULT_PEER_PODS_IMAGES;

/** The images, as the operator's deployment may override them (RELATED_IMAGE_*, OLM's convention). */
export function imagesFromEnv(env: Record<string, string | undefined> = process.env): PeerPodsImages {
  return {
    caa: env[CAA_IMAGE_ENV] || DEFAULT_IMAGES.caa,
    podvmBuilder: env[PODVM_BUILDER_IMAGE_ENV] || DEFAULT_IMAGES.podvmBuilder,
  };
}

/**
 * A digest of the whole peer pods configuration (ConfigMap data + Secret data), on the image jobs: a failed
 * creation is retried once either changed in any way. (The adaptor's pods carry adaptorConfigHash, of what
 * the adaptor reads only.) It reveals nothing of the values.
 */
export function configHash(cm: ConfigMap | undefined, secret: Secret | undefined): string {
  return digest({
    cm: sortedEntries(cm?.data),
    secret: sortedEntries(secret?.data),
    secretString: sortedEntries(secret?.stringData),
  });
}

/** A kata node by the platform's selector; never a node being deleted. */
export function isKataNode(node: Node, nodeSelector: Record<string, string>): boolean {
  if (node.metadata.deletionTimestamp) return false;
  return matchesSelector(node, nodeSelector);
}

const ownedLabels = (component: string) => ({
  'app.kubernetes.io/name': 'osc',
  [COMPONENT_LABEL]: component,
  [MANAGED_BY_LABEL]: MANAGED_BY,
});

export function desiredPeerPodConfig(namespace: string, limit: number, placement: KataNodePlacement, owner: OwnerReference): PeerPodConfig {
  return {
    metadata: {
      name: PEER_POD_CONFIG,
      namespace,
      labels: ownedLabels('peerpodconfig'),
      annotations: { [LIMIT_FROM_CM_ANNOTATION]: String(limit) },
      ownerReferences: [owner],
    },
    spec: {
      cloudSecretName: PEER_PODS_SECRET,
      configMapName: PEER_PODS_CM,
      limit: String(limit),
      nodeSelector: placement.nodeSelector,
    },
  };
}

export type ImageJobKind = 'creation' | 'deletion';
export const imageJobName = (kind: ImageJobKind) => (kind === 'creation' ? PODVM_IMAGE_CREATION_JOB : PODVM_IMAGE_DELETION_JOB);

/**
 * A pod VM image job: `/podvm-builder.sh create` builds the image in the cloud and writes its ID into
 * the cloud's image key (PODVM_AMI_ID on AWS); `delete` removes the image named by `imageEnv` (AMI_ID on AWS). One attempt and one retry (backoffLimit), then
 * the job is Failed and osc reports it instead of trying forever.
 */
export function desiredImageJob(opts: {
  kind: ImageJobKind;
  namespace: string;
  image: string;
  backoffLimit: number;
  configHash: string;
  owner: OwnerReference;
  /** The image a deletion job deletes. */
  amiId?: string;
  /** The variable naming it, the cloud's (AMI_ID when not given). */
  imageEnv?: string;
  /** A creation job's parameters besides peer-pods-cm and the Secret (the cloud's creationEnv). */
  creationEnv?: Readonly<Record<string, string>>;
  /** A deletion job's inputs (deletionInputs). */
  inputs?: string;
  /** How the job gets its cloud credentials; default peer-pods-secret, whole. */
  credentials?: CredentialsWiring;
}): Job {
  const creds = opts.credentials ?? credentialsWiring({ kind: 'secret' }, PEER_PODS_SECRET);
  const name = imageJobName(opts.kind);
  const labels = { ...ownedLabels(IMAGE_JOB_COMPONENT), 'job-name': name };
  return {
    metadata: {
      name,
      namespace: opts.namespace,
      labels,
      annotations: {
        [CONFIG_HASH_ANNOTATION]: opts.configHash,
        ...(opts.amiId ? { [DELETES_IMAGE_ANNOTATION]: opts.amiId } : {}),
        ...(opts.inputs ? { [DELETION_INPUTS_ANNOTATION]: opts.inputs } : {}),
      },
      ownerReferences: [opts.owner],
    },
    spec: {
      parallelism: 1,
      completions: 1,
      backoffLimit: opts.backoffLimit,
      template: {
        metadata: { labels, annotations: { [REQUIRED_SCC_ANNOTATION]: PODVM_IMAGE_SCC } },
        spec: {
          serviceAccountName: PODVM_IMAGE_SERVICE_ACCOUNT,
          // The builder talks to the cloud, never to the cluster's API.
          automountServiceAccountToken: false,
          restartPolicy: 'Never',
          containers: [
            {
              name: opts.kind === 'creation' ? 'create' : 'delete',
              image: opts.image,
              command: ['/podvm-builder.sh', opts.kind === 'creation' ? 'create' : 'delete'],
              envFrom: [...creds.envFrom, { configMapRef: { name: PEER_PODS_CM, optional: true } }],
              env: [
                ...creds.env,
                ...(opts.amiId ? [{ name: opts.imageEnv ?? 'AMI_ID', value: opts.amiId }] : []),
                ...Object.entries(opts.creationEnv ?? {}).map(([name, value]) => ({ name, value })),
              ],
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
              ...(creds.volumeMounts.length ? { volumeMounts: creds.volumeMounts } : {}),
            },
          ],
          ...(creds.volumes.length ? { volumes: creds.volumes } : {}),
        },
      },
    },
  };
}

export type JobPhase = 'active' | 'complete' | 'failed';

/** Where a Job stands, from its status conditions (the Job controller's view). */
export function jobPhase(job: Job): JobPhase {
  const conds = job.status?.conditions ?? [];
  if (conds.some((c) => c.type === 'Complete' && c.status === 'True')) return 'complete';
  if (conds.some((c) => c.type === 'Failed' && c.status === 'True')) return 'failed';
  return 'active';
}

export function jobFailureDetail(job: Job): string {
  const c = job.status?.conditions?.find((x) => x.type === 'Failed' && x.status === 'True');
  if (!c) return peerPodsMessages.jobFailed;
  return [c.reason, c.message].filter(Boolean).join(': ') || peerPodsMessages.jobFailed;
}

// ---------------------------------------------------------------------------------------------------------
// Conditions (their texts: src/api/peerpods-conditions.ts)

/** PeerPodsConfigValid: the validation's verdict. Problems name the key and the fix; never a secret value. */
export function configCondition(v: PeerPodsValidation): ConditionInput {
  if (v.problems.length > 0) {
    return { type: CONFIG_VALID, status: 'False', reason: peerPodsReasons.invalid, message: formatProblems(v.problems) };
  }
  const notes = v.warnings.map((w) => w.message.replace(/\.$/, ''));
  return { type: CONFIG_VALID, status: 'True', reason: peerPodsReasons.valid, message: peerPodsMessages.configValid(notes) };
}

/** What the latest image job says, for the three PodVMImageJob* conditions. */
export type ImageObservation =
  | { state: 'running'; kind: ImageJobKind; amiId?: string }
  | { state: 'completed'; kind: ImageJobKind; amiId: string }
  | { state: 'failed'; kind: ImageJobKind; detail: string; namespace: string; kataConfig?: string }
  /** The administrator keeps the image osc built (KEEP_IMAGE_ANNOTATION): no deletion runs. */
  | { state: 'kept'; amiId: string }
  /** An AMI is in use that no job of osc made (the administrator's): nothing runs, nothing failed. */
  | { state: 'provided'; amiId: string };

/**
 * The PodVMImageJobRunning / Completed / Failed conditions for an observation: exactly one of them is True
 * while a job has something to say. `image` is the cloud's (its key: PODVM_AMI_ID, AZURE_IMAGE_ID,
 * PODVM_IMAGE_NAME); AWS's when not given.
 */
export function imageConditions(o: ImageObservation, image: Pick<CloudImage, 'key' | 'noun'> = defaultCloud().image): ConditionInput[] {
  const { key } = image;
  const r = peerPodsReasons;
  const m = peerPodsMessages;
  /** The three conditions, `which` of them True (none: all False), with one reason and message. */
  const three = (which: string | undefined, reason: string, message: string): ConditionInput[] =>
    IMAGE_CONDITIONS.map((type) => ({ type, status: type === which ? 'True' : 'False', reason, message }));
  switch (o.state) {
    case 'running': {
      const job = imageJobName(o.kind);
      return o.kind === 'creation'
        ? three(IMAGE_JOB_RUNNING, r.creationRunning, m.imageBuilding(job, key))
        : three(IMAGE_JOB_RUNNING, r.deletionRunning, m.imageDeleting(job, o.amiId));
    }
    case 'completed': {
      const job = imageJobName(o.kind);
      return o.kind === 'creation'
        ? three(IMAGE_JOB_COMPLETED, r.created, m.imageCreated(job, o.amiId, key))
        : three(IMAGE_JOB_COMPLETED, r.deleted, m.imageDeleted(job, o.amiId, key));
    }
    case 'failed': {
      const job = imageJobName(o.kind);
      const next =
        o.kind === 'creation' ? m.creationRetry(job, o.namespace, key, image.noun) : m.deletionRetry(job, o.namespace, o.kataConfig);
      const reason = o.kind === 'creation' ? r.creationFailed : r.deletionFailed;
      return three(IMAGE_JOB_FAILED, reason, m.imageJobFailed(job, o.detail, o.namespace, next));
    }
    case 'kept':
      return three(undefined, r.kept, m.imageKept(o.amiId, key));
    case 'provided':
      return three(undefined, r.provided, m.imageProvided(o.amiId, key));
  }
}

export const hasAnyCondition = (conditions: readonly Condition[] | undefined, types: readonly string[]) =>
  (conditions ?? []).some((c) => types.includes(c.type));

/** This controller's conditions among a KataConfig's, in a fixed order (PEERPODS_CONDITIONS'). */
export const ownConditions = (conditions: readonly Condition[] | undefined): Condition[] =>
  PEERPODS_CONDITIONS.flatMap((type) => conditions?.filter((c) => c.type === type) ?? []);

/**
 * The KataConfig status fields this controller owns and applies under its own field manager: its
 * conditions, nothing else (docs/architecture.md, "One writer per field"). A condition it stops applying is
 * removed by the server.
 */
export const peerPodsStatusShare: StatusShare<KataConfigStatus> = {
  fieldManager: 'osc-peerpods',
  owned: (s) => {
    const conditions = ownConditions(s?.conditions);
    return conditions.length ? { conditions } : {};
  },
};
