/**
 * Peer pods on Google Cloud: the keys of peer-pods-cm as the cloud-api-adaptor reads them (project, zone,
 * network, machine type), the service account key in peer-pods-secret, Compute Engine machine types and the
 * image the image job creates.
 */
import { OPERATOR_NAMESPACE, PEER_PODS_SECRET } from '../../../api/names.ts';
import { q } from '../../config-values.ts';
import { closestName } from '../../policy.ts';
import type { CloudProvider } from '../provider.ts';
import { gcpIssued } from './credentials.ts';
import {
  checkServiceAccountKey,
  DISK_TYPES,
  GCP_MACHINE_TYPES,
  GCP_REGIONS,
  IMAGE_RE,
  NETWORK_RE,
  PROJECT_ID_RE,
  ZONE_RE,
} from './facts.ts';

export interface GcpSettings {
  /** PODVM_IMAGE_NAME; '' means the operator must build the pod VM image. */
  imageName: string;
  projectId: string;
  zone: string;
  network: string;
  diskType: string;
}

export const GCP_DEFAULTS = Object.freeze({ GCP_NETWORK: 'global/networks/default', GCP_DISK_TYPE: 'pd-standard' });

const HOW_TO_FIND = {
  GCP_PROJECT_ID: "the cluster's project (oc get infrastructure/cluster -o jsonpath='{.status.platformStatus.gcp.projectID}')",
  GCP_ZONE:
    "a zone of the cluster's region (oc get infrastructure/cluster -o jsonpath='{.status.platformStatus.gcp.region}', then a zone like <region>-a)",
};

export const GCP_CM_KEYS = [
  'CLOUD_PROVIDER',
  'VXLAN_PORT',
  'PROXY_TIMEOUT',
  'GCP_PROJECT_ID',
  'GCP_ZONE',
  'GCP_NETWORK',
  'GCP_MACHINE_TYPE',
  'PODVM_INSTANCE_TYPES',
  'GCP_DISK_TYPE',
  'PODVM_IMAGE_NAME',
  'TAGS',
  'PEERPODS_LIMIT_PER_NODE',
  'ROOT_VOLUME_SIZE',
  'DISABLECVM',
] as const;

function checkZone(v: string): string | undefined {
  const m = ZONE_RE.exec(v);
  if (GCP_REGIONS.includes(v)) return `it is a region, not a zone; set it to one of its zones, like ${v}-a`;
  if (!m) return `it is not a Compute Engine zone (a region and a letter, like us-central1-a); set it to ${HOW_TO_FIND.GCP_ZONE}`;
  const region = m[1] as string;
  if (!GCP_REGIONS.includes(region)) {
    const guess = closestName(region, GCP_REGIONS, 3);
    return `${region} is not a Google Cloud region${guess ? ` (did you mean ${guess}?)` : ''}; set it to ${HOW_TO_FIND.GCP_ZONE}`;
  }
  return undefined;
}

export const gcp: CloudProvider<GcpSettings> = {
  name: 'gcp',
  title: 'Google Cloud',
  infrastructureType: 'GCP',
  cmKeys: GCP_CM_KEYS,
  // osc's allowed list for admission: the adaptor has its own key (GCP_INSTANCE_TYPES) and never reads this one.
  notReadByAdaptor: ['PODVM_INSTANCE_TYPES'],
  otherCmKeys: ['GCP_CONFIDENTIAL_TYPE', 'USE_PUBLIC_IP', 'DISABLE_CLOUD_CONFIG', 'CLOUD_CONFIG_VERIFY'],
  listKeys: ['PODVM_INSTANCE_TYPES'],
  requiredInWords: 'CLOUD_PROVIDER, GCP_PROJECT_ID and GCP_ZONE',
  sizes: {
    defaultKey: 'GCP_MACHINE_TYPE',
    listKey: 'PODVM_INSTANCE_TYPES',
    // The adaptor's default.
    defaultSize: 'e2-medium',
    noun: 'machine type',
    short: 'machine type',
    pattern: /^[a-z][a-z0-9]*-([a-z]+(-\d+[a-z]*)?|custom-\d+-\d+)$/,
    shape: 'a Compute Engine machine type name (like e2-medium or n2-standard-4)',
    listExample: 'e2-medium,e2-standard-4,n2-standard-8',
    defaultOutsideList: 'problem',
    table: GCP_MACHINE_TYPES,
    warnUnknown: true,
  },
  image: {
    key: 'PODVM_IMAGE_NAME',
    deletionEnv: 'IMAGE_NAME',
    // Images are named <prefix>-<suffix> in GCP_PROJECT_ID.
    creationEnv: { IMAGE_NAME_PREFIX: 'podvm-image' },
    what: 'image name',
    noun: 'image',
    check: (v) =>
      IMAGE_RE.test(v)
        ? undefined
        : 'it is not a Compute Engine image (a name of lower-case letters, digits and hyphens, or projects/<project>/global/images/<name>)',
    example: 'podvm-0-0-1',
  },
  secret: {
    required: ['GCP_CREDENTIALS'],
    optional: [],
    describe: () => 'the JSON key of the service account the pod VMs are created with',
    createCommand: `oc create secret generic ${PEER_PODS_SECRET} -n ${OPERATOR_NAMESPACE} --from-file GCP_CREDENTIALS=<key.json>`,
    checkValue: (_key, value) => checkServiceAccountKey(value),
  },
  credentials: gcpIssued,
  tags: {
    // Compute Engine labels: 64 per resource, lower-case keys.
    max: 64,
    maxValue: 63,
    checkKey(k) {
      if (!/^[a-z][-_a-z0-9]{0,62}$/.test(k)) {
        return `the key ${q(k)} is not a Google Cloud label key (up to 63 lower-case letters, digits, _ and -, starting with a letter)`;
      }
      return undefined;
    },
  },
  maxRootVolumeGB: 65536,
  maxRootVolumeWhat: 'the largest persistent disk',

  validate(ctx) {
    const projectId = ctx.required('GCP_PROJECT_ID', HOW_TO_FIND.GCP_PROJECT_ID, (v) =>
      PROJECT_ID_RE.test(v)
        ? undefined
        : `it is not a project ID (6 to 30 lower-case letters, digits and hyphens, starting with a letter; not the project's number or display name); set it to ${HOW_TO_FIND.GCP_PROJECT_ID}`,
    );
    const zone = ctx.required('GCP_ZONE', HOW_TO_FIND.GCP_ZONE, checkZone);
    let network: string | undefined = GCP_DEFAULTS.GCP_NETWORK;
    const nw = ctx.value('GCP_NETWORK');
    if (nw !== undefined && nw !== '') {
      if (!NETWORK_RE.test(nw)) {
        network = undefined;
        ctx.problems.push({
          key: 'GCP_NETWORK',
          message: `GCP_NETWORK is ${q(nw)}: it is not a VPC network (global/networks/<name>, or its name); set it to the cluster's network, or leave it out for ${GCP_DEFAULTS.GCP_NETWORK}`,
        });
      } else network = nw;
    }
    let diskType: string | undefined = GCP_DEFAULTS.GCP_DISK_TYPE;
    const dt = ctx.value('GCP_DISK_TYPE');
    if (dt !== undefined && dt !== '') {
      if (!DISK_TYPES.includes(dt)) {
        diskType = undefined;
        ctx.problems.push({
          key: 'GCP_DISK_TYPE',
          message: `GCP_DISK_TYPE is ${q(dt)}: it is not a disk type the adaptor takes; set it to one of ${DISK_TYPES.join(', ')}`,
        });
      } else diskType = dt;
    }
    if (!projectId || !zone || !network || !diskType) return undefined;
    return { imageName: ctx.value('PODVM_IMAGE_NAME') ?? '', projectId, zone, network, diskType };
  },
};
