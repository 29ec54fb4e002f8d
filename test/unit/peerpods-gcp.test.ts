/**
 * Peer pods on Google Cloud (src/peerpods/clouds/gcp/): the peer-pods-cm the adaptor documents, every bad
 * value of its keys and of the service account key in peer-pods-secret with its message, and machine types
 * chosen from Google Cloud's table.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ConfigMap, Secret } from '../../src/kube/resources.ts';
import { GCP_MACHINE_TYPES } from '../../src/peerpods/clouds/gcp/facts.ts';
import { gcp } from '../../src/peerpods/clouds/gcp/provider.ts';
import { validatePeerPodsConfig } from '../../src/peerpods/config.ts';
import { mutatePeerPod } from '../../src/peerpods/mutate.ts';
import { GCP_PRIVATE_KEY, GCP_PROJECT, gcpData, gcpKeyFile } from '../support/clouds.ts';

const NS = 'openshift-sandboxed-containers-operator';
const cmOf = (data: Record<string, string>): ConfigMap => ({ metadata: { name: 'peer-pods-cm', namespace: NS }, data });
const secretOf = (stringData: Record<string, string>): Secret => ({ metadata: { name: 'peer-pods-secret', namespace: NS }, stringData });
const goodSecret = () => secretOf({ GCP_CREDENTIALS: gcpKeyFile() });
const withData = (change: Record<string, string | null>) => {
  const data = gcpData();
  for (const [k, v] of Object.entries(change)) {
    if (v === null) delete data[k];
    else data[k] = v;
  }
  return cmOf(data);
};
const PROJECT_FIX = "set it to the cluster's project (oc get infrastructure/cluster -o jsonpath='{.status.platformStatus.gcp.projectID}')";
const ZONE_FIX =
  "set it to a zone of the cluster's region (oc get infrastructure/cluster -o jsonpath='{.status.platformStatus.gcp.region}', then a zone like <region>-a)";
const KEY_FIX = 'store the key file of the service account (gcloud iam service-accounts keys create key.json --iam-account=<account>)';

describe('Google Cloud: the documented peer-pods-cm', () => {
  test('gives a typed configuration with the Google Cloud settings and defaults', () => {
    const r = validatePeerPodsConfig(cmOf(gcpData()), goodSecret());
    assert.deepEqual(r.problems, []);
    assert.deepEqual(r.warnings, []);
    assert.deepEqual(
      { ...r.config, data: undefined },
      {
        cloudProvider: 'gcp',
        vxlanPort: 9000,
        proxyTimeout: '5m',
        proxyTimeoutMs: 300_000,
        instanceType: 'e2-medium',
        instanceTypes: [],
        allowedInstanceTypes: ['e2-medium'],
        imageName: '',
        projectId: GCP_PROJECT,
        zone: 'us-central1-a',
        network: 'global/networks/default',
        diskType: 'pd-standard',
        tags: { key1: 'value1', key2: 'value2' },
        limitPerNode: 10,
        rootVolumeSizeGB: 6,
        disableCVM: true,
        secretKeys: ['GCP_CREDENTIALS'],
        data: undefined,
      },
    );
  });

  test('GCP_NETWORK and GCP_MACHINE_TYPE have defaults; a network may be named three ways', () => {
    const r = validatePeerPodsConfig(withData({ GCP_NETWORK: null, GCP_MACHINE_TYPE: null }), goodSecret());
    assert.equal(r.config?.network, 'global/networks/default');
    assert.equal(r.config?.instanceType, 'e2-medium');
    for (const network of ['default', 'global/networks/osc-vpc', `projects/${GCP_PROJECT}/global/networks/osc-vpc`]) {
      assert.deepEqual(validatePeerPodsConfig(withData({ GCP_NETWORK: network }), goodSecret()).problems, [], network);
    }
  });

  test('an image by name or by its project path', () => {
    for (const name of ['podvm-image-0-0-1', 'projects/osc-images/global/images/podvm']) {
      const r = validatePeerPodsConfig(withData({ PODVM_IMAGE_NAME: name }), goodSecret());
      assert.equal(r.config?.imageName, name);
    }
  });
});

const badConfigMaps: { name: string; change: Record<string, string | null>; key: string; message: string }[] = [
  {
    name: 'GCP_PROJECT_ID missing',
    change: { GCP_PROJECT_ID: null },
    key: 'GCP_PROJECT_ID',
    message: `GCP_PROJECT_ID is missing from ConfigMap peer-pods-cm: it is required for gcp; ${PROJECT_FIX}`,
  },
  {
    name: 'GCP_PROJECT_ID empty',
    change: { GCP_PROJECT_ID: '' },
    key: 'GCP_PROJECT_ID',
    message: `GCP_PROJECT_ID is empty in ConfigMap peer-pods-cm: it is required for gcp; ${PROJECT_FIX}`,
  },
  {
    name: "GCP_PROJECT_ID the project's number",
    change: { GCP_PROJECT_ID: '123456789012' },
    key: 'GCP_PROJECT_ID',
    message: `GCP_PROJECT_ID is "123456789012": it is not a project ID (6 to 30 lower-case letters, digits and hyphens, starting with a letter; not the project's number or display name); ${PROJECT_FIX}`,
  },
  {
    name: 'GCP_ZONE missing',
    change: { GCP_ZONE: null },
    key: 'GCP_ZONE',
    message: `GCP_ZONE is missing from ConfigMap peer-pods-cm: it is required for gcp; ${ZONE_FIX}`,
  },
  {
    name: 'GCP_ZONE a region',
    change: { GCP_ZONE: 'us-central1' },
    key: 'GCP_ZONE',
    message: 'GCP_ZONE is "us-central1": it is a region, not a zone; set it to one of its zones, like us-central1-a',
  },
  {
    name: 'GCP_ZONE in a misspelt region',
    change: { GCP_ZONE: 'europe-wset1-b' },
    key: 'GCP_ZONE',
    message: `GCP_ZONE is "europe-wset1-b": europe-wset1 is not a Google Cloud region (did you mean europe-west1?); ${ZONE_FIX}`,
  },
  {
    name: 'GCP_ZONE an AWS availability zone',
    change: { GCP_ZONE: 'us-east-2a' },
    key: 'GCP_ZONE',
    message: `GCP_ZONE is "us-east-2a": it is not a Compute Engine zone (a region and a letter, like us-central1-a); ${ZONE_FIX}`,
  },
  {
    name: 'GCP_NETWORK a URL path that is not a network',
    change: { GCP_NETWORK: 'projects/x/networks/y' },
    key: 'GCP_NETWORK',
    message:
      'GCP_NETWORK is "projects/x/networks/y": it is not a VPC network (global/networks/<name>, or its name); set it to the cluster\'s network, or leave it out for global/networks/default',
  },
  {
    name: 'GCP_MACHINE_TYPE in AWS spelling',
    change: { GCP_MACHINE_TYPE: 'e2.medium' },
    key: 'GCP_MACHINE_TYPE',
    message:
      'GCP_MACHINE_TYPE is "e2.medium": it is not a Compute Engine machine type name (like e2-medium or n2-standard-4); set it to one',
  },
  {
    name: 'PODVM_INSTANCE_TYPES that leaves out the default machine type',
    change: { PODVM_INSTANCE_TYPES: 'e2-standard-4,n2-standard-8' },
    key: 'PODVM_INSTANCE_TYPES',
    message:
      'PODVM_INSTANCE_TYPES is "e2-standard-4,n2-standard-8": it leaves out the default machine type e2-medium (GCP_MACHINE_TYPE); add e2-medium to the list, or set GCP_MACHINE_TYPE to one of the listed machine types',
  },
  {
    name: 'PODVM_IMAGE_NAME with capitals and underscores',
    change: { PODVM_IMAGE_NAME: 'Podvm_Image' },
    key: 'PODVM_IMAGE_NAME',
    message:
      'PODVM_IMAGE_NAME is "Podvm_Image": it is not a Compute Engine image (a name of lower-case letters, digits and hyphens, or projects/<project>/global/images/<name>); set it to your image name, or to "" to have the operator build the pod VM image',
  },
  {
    name: 'GCP_DISK_TYPE unknown',
    change: { GCP_DISK_TYPE: 'ssd' },
    key: 'GCP_DISK_TYPE',
    message:
      'GCP_DISK_TYPE is "ssd": it is not a disk type the adaptor takes; set it to one of pd-standard, pd-balanced, pd-ssd, pd-extreme, hyperdisk-balanced',
  },
  {
    name: 'TAGS with a key that is not a label key',
    change: { TAGS: 'Team=x' },
    key: 'TAGS',
    message:
      'TAGS is "Team=x": the key "Team" is not a Google Cloud label key (up to 63 lower-case letters, digits, _ and -, starting with a letter); write tags as key1=value1,key2=value2',
  },
  {
    name: 'ROOT_VOLUME_SIZE above the largest persistent disk',
    change: { ROOT_VOLUME_SIZE: '70000' },
    key: 'ROOT_VOLUME_SIZE',
    message: 'ROOT_VOLUME_SIZE is "70000": the maximum is 65536 (GB, the largest persistent disk); set it to 65536 or less',
  },
];

describe('Google Cloud: bad peer-pods-cm values', () => {
  for (const bad of badConfigMaps) {
    test(bad.name, () => {
      const r = validatePeerPodsConfig(withData(bad.change), goodSecret());
      assert.deepEqual(r.problems, [{ key: bad.key, message: bad.message }]);
      assert.equal(r.config, undefined);
    });
  }

  test('a machine type osc does not know is a warning', () => {
    const r = validatePeerPodsConfig(withData({ GCP_MACHINE_TYPE: 'e2-mediun' }), goodSecret());
    assert.deepEqual(r.problems, []);
    assert.deepEqual(
      r.warnings.map((w) => w.message),
      [
        "GCP_MACHINE_TYPE names e2-mediun, not a Google Cloud machine type osc knows the size of; check the spelling (best fit for a pod's vCPUs and memory never picks it)",
      ],
    );
  });
});

const badKeys: { name: string; value: string; message: string }[] = [
  { name: 'not JSON', value: 'AIzaSyExampleApiKey', message: `GCP_CREDENTIALS in Secret peer-pods-secret is not JSON; ${KEY_FIX}` },
  { name: 'a JSON list', value: '[]', message: `GCP_CREDENTIALS in Secret peer-pods-secret is JSON but not an object; ${KEY_FIX}` },
  {
    name: "a user's application default credentials",
    value: JSON.stringify({ type: 'authorized_user', client_id: 'x', client_secret: 'y', refresh_token: 'z' }),
    message: `GCP_CREDENTIALS in Secret peer-pods-secret has type "authorized_user", not "service_account" (is it a user's application default credentials?); ${KEY_FIX}`,
  },
  {
    name: 'a key without its private key',
    value: gcpKeyFile({ private_key: undefined }),
    message: `GCP_CREDENTIALS in Secret peer-pods-secret lacks private_key; ${KEY_FIX}`,
  },
  {
    name: 'a key with a mangled private key',
    value: gcpKeyFile({ private_key: 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC' }),
    message: `GCP_CREDENTIALS in Secret peer-pods-secret has a private_key that is not a PEM private key; ${KEY_FIX}`,
  },
  {
    name: "a person's e-mail as the client",
    value: gcpKeyFile({ client_email: 'me@example.com' }),
    message: `GCP_CREDENTIALS in Secret peer-pods-secret has a client_email that is not a service account (<name>@<project>.iam.gserviceaccount.com); ${KEY_FIX}`,
  },
  {
    name: 'empty',
    value: '',
    message:
      'GCP_CREDENTIALS is empty in Secret peer-pods-secret: it is required for gcp; set it to the JSON key of the service account the pod VMs are created with',
  },
];

describe('Google Cloud: bad service account keys', () => {
  for (const bad of badKeys) {
    test(bad.name, () => {
      const r = validatePeerPodsConfig(cmOf(gcpData()), secretOf({ GCP_CREDENTIALS: bad.value }));
      assert.deepEqual(r.problems, [{ key: 'GCP_CREDENTIALS', message: bad.message }]);
      assert.ok(!JSON.stringify(r).includes(GCP_PRIVATE_KEY.slice(28, 40)), 'the key never shows in a message');
    });
  }

  test('a key file read with --from-file (base64 under data, ending with a line break) is fine', () => {
    const s: Secret = {
      metadata: { name: 'peer-pods-secret', namespace: NS },
      data: { GCP_CREDENTIALS: Buffer.from(gcpKeyFile()).toString('base64') },
    };
    assert.deepEqual(validatePeerPodsConfig(cmOf(gcpData()), s).problems, []);
  });
});

describe('Google Cloud: machine types', () => {
  test('the table holds the adaptor default and the common families', () => {
    assert.deepEqual(GCP_MACHINE_TYPES['e2-medium'], { vcpus: 2, memoryMiB: 4096 });
    assert.deepEqual(GCP_MACHINE_TYPES['n2-standard-4'], { vcpus: 4, memoryMiB: 16384 });
    assert.deepEqual(GCP_MACHINE_TYPES['n2d-standard-2'], { vcpus: 2, memoryMiB: 8192 });
    assert.deepEqual(GCP_MACHINE_TYPES['n1-standard-1'], { vcpus: 1, memoryMiB: 3840 });
  });

  test('best fit among the allowed machine types, and a refusal in Google Cloud words', () => {
    const settings = { defaultType: 'e2-medium', allowedTypes: ['e2-medium', 'e2-standard-4', 'n2-highmem-2'], sizes: gcp.sizes };
    const pod = (cpu: string, memory: string) => ({
      metadata: { name: 'p', namespace: 'default' },
      spec: { runtimeClassName: 'kata-remote', containers: [{ name: 'c', image: 'i', resources: { limits: { cpu, memory } } }] },
    });
    const a = mutatePeerPod(pod('3', '12Gi'), settings);
    assert.ok(a.allowed);
    assert.equal(a.summary?.instanceType, 'e2-standard-4');
    const b = mutatePeerPod(pod('2', '14Gi'), settings);
    assert.ok(b.allowed);
    assert.equal(b.summary?.instanceType, 'n2-highmem-2');
    const c = mutatePeerPod(pod('16', '1Gi'), settings);
    assert.equal(c.allowed, false);
    assert.match(
      (c as { message: string }).message,
      /more than any allowed machine type offers: .*add a larger machine type to PODVM_INSTANCE_TYPES/,
    );
  });
});
