/**
 * The cloud registry (src/peerpods/clouds/index.ts): a cloud is a folder and one registry line. A fourth
 * cloud, registered here as a test brings one, is validated, sized and imaged without any other cloud's
 * code or the generic checks knowing it.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { desiredImageJob } from '../../src/controllers/peerpods/desired.ts';
import type { ConfigMap, Pod, Secret } from '../../src/kube/resources.ts';
import {
  cloudNames,
  cloudProvider,
  imageDeletionEnvOf,
  imageIdOf,
  imageKeyOf,
  imageOf,
  registerCloud,
} from '../../src/peerpods/clouds/index.ts';
import type { CloudProvider } from '../../src/peerpods/clouds/provider.ts';
import { validatePeerPodsConfig } from '../../src/peerpods/config.ts';
import { MACHINE_TYPE_ANNOTATION, mutatePeerPod } from '../../src/peerpods/mutate.ts';

const NS = 'openshift-sandboxed-containers-operator';

/** What a libvirt folder's provider.ts would export. */
const libvirt: CloudProvider<{ uri: string; pool: string }> = {
  name: 'libvirt',
  title: 'libvirt',
  infrastructureType: 'BareMetal',
  cmKeys: [
    'CLOUD_PROVIDER',
    'VXLAN_PORT',
    'LIBVIRT_URI',
    'LIBVIRT_POOL',
    'LIBVIRT_VM_SIZE',
    'LIBVIRT_VM_SIZES',
    'LIBVIRT_VOL_NAME',
    'TAGS',
  ],
  otherCmKeys: ['LIBVIRT_NET'],
  listKeys: ['LIBVIRT_VM_SIZES'],
  requiredInWords: 'CLOUD_PROVIDER and LIBVIRT_URI',
  sizes: {
    defaultKey: 'LIBVIRT_VM_SIZE',
    listKey: 'LIBVIRT_VM_SIZES',
    defaultSize: 'small',
    noun: 'domain size',
    short: 'size',
    pattern: /^[a-z]+$/,
    shape: 'a domain size (like small)',
    listExample: 'small,large',
    defaultOutsideList: 'problem',
    table: { small: { vcpus: 1, memoryMiB: 2048 }, large: { vcpus: 4, memoryMiB: 8192 } },
    warnUnknown: true,
  },
  image: {
    key: 'LIBVIRT_VOL_NAME',
    deletionEnv: 'VOL_NAME',
    creationEnv: { LIBVIRT_POOL: 'default' },
    what: 'volume name',
    noun: 'volume',
    check: (v) => (/^[\w.-]+$/.test(v) ? undefined : 'it is not a volume name'),
    example: 'podvm-base.qcow2',
  },
  secret: {
    required: ['LIBVIRT_SSH_KEY'],
    optional: [],
    describe: () => 'the SSH key that reaches the libvirt host',
    createCommand: 'oc create secret generic peer-pods-secret --from-file LIBVIRT_SSH_KEY=id_rsa',
  },
  tags: { max: 10, maxValue: 64, checkKey: () => undefined },
  maxRootVolumeGB: 1000,
  maxRootVolumeWhat: 'the pool',
  validate(ctx) {
    const uri = ctx.required('LIBVIRT_URI', 'the host (qemu+ssh://root@host/system)', (v) =>
      v.startsWith('qemu') ? undefined : 'it is not a libvirt URI; set it to qemu+ssh://root@<host>/system',
    );
    return uri ? { uri, pool: ctx.value('LIBVIRT_POOL') || 'default' } : undefined;
  },
};

const cm = (data: Record<string, string>): ConfigMap => ({ metadata: { name: 'peer-pods-cm', namespace: NS }, data });
const secret: Secret = { metadata: { name: 'peer-pods-secret', namespace: NS }, stringData: { LIBVIRT_SSH_KEY: 'key' } };
const pod = (cpu: string, memory: string): Pod => ({
  metadata: { name: 'p', namespace: 'default' },
  spec: { runtimeClassName: 'kata-remote', containers: [{ name: 'c', image: 'i', resources: { limits: { cpu, memory } } }] },
});

describe('the cloud registry', () => {
  const unregister = registerCloud(libvirt);
  after(unregister);

  test('the built-in clouds come first, a registered one after them, and a name only once', () => {
    assert.deepEqual(cloudNames(), ['aws', 'azure', 'gcp', 'libvirt']);
    assert.throws(() => registerCloud(libvirt), /a cloud named libvirt is already registered/);
  });

  test("a registered cloud's ConfigMap is checked with its own keys, defaults and settings", () => {
    const r = validatePeerPodsConfig(cm({ CLOUD_PROVIDER: 'libvirt', LIBVIRT_URI: 'qemu+ssh://root@10.0.0.1/system' }), secret);
    assert.deepEqual(r.problems, []);
    assert.equal(r.config?.cloudProvider, 'libvirt');
    assert.equal(r.config?.uri, 'qemu+ssh://root@10.0.0.1/system');
    assert.equal(r.config?.pool, 'default');
    assert.equal(r.config?.instanceType, 'small');
    assert.deepEqual(r.config?.secretKeys, ['LIBVIRT_SSH_KEY']);
  });

  test('its required keys, size list, image key and Secret are reported in its own words', () => {
    const r = validatePeerPodsConfig(cm({ CLOUD_PROVIDER: 'libvirt', LIBVIRT_VM_SIZES: 'large', LIBVIRT_VOL_NAME: 'a b' }), undefined);
    assert.deepEqual(
      r.problems.map((p) => p.message),
      [
        'LIBVIRT_URI is missing from ConfigMap peer-pods-cm: it is required for libvirt; set it to the host (qemu+ssh://root@host/system)',
        'LIBVIRT_VM_SIZES is "large": it leaves out the default domain size small (LIBVIRT_VM_SIZE, its default); add small to the list, or set LIBVIRT_VM_SIZE to one of the listed domain sizes',
        'LIBVIRT_VOL_NAME is "a b": it is not a volume name; set it to your volume name, or to "" to have the operator build the pod VM image',
        'Secret peer-pods-secret not found in namespace openshift-sandboxed-containers-operator: peer pods on libvirt need LIBVIRT_SSH_KEY; create it with oc create secret generic peer-pods-secret --from-file LIBVIRT_SSH_KEY=id_rsa',
      ],
    );
  });

  test('pods are sized from its table, and its image key is the one the image jobs fill', () => {
    const data = { CLOUD_PROVIDER: 'libvirt', LIBVIRT_VM_SIZES: 'small,large', LIBVIRT_VOL_NAME: 'podvm.qcow2' };
    const { sizes } = cloudProvider('libvirt') as CloudProvider;
    const r = mutatePeerPod(pod('2', '1Gi'), { defaultType: 'small', allowedTypes: ['small', 'large'], sizes });
    assert.ok(r.allowed);
    assert.equal(r.summary?.instanceType, 'large');
    const refused = mutatePeerPod(pod('8', '1Gi'), { defaultType: 'small', allowedTypes: ['small', 'large'], sizes });
    assert.equal(refused.allowed, false);
    assert.match(
      (refused as { message: string }).message,
      /more than any allowed domain size offers.*add a larger size to LIBVIRT_VM_SIZES/,
    );
    const named = mutatePeerPod(
      { ...pod('1', '1Gi'), metadata: { name: 'p', namespace: 'default', annotations: { [MACHINE_TYPE_ANNOTATION]: 'huge' } } },
      { defaultType: 'small', allowedTypes: ['small', 'large'], sizes },
    );
    assert.match((named as { message: string }).message, /^domain size "huge" .* the allowed sizes are small, large/);
    assert.equal(imageKeyOf(data), 'LIBVIRT_VOL_NAME');
    assert.equal(imageIdOf(data), 'podvm.qcow2');
    assert.equal(imageDeletionEnvOf(data), 'VOL_NAME');
    const job = desiredImageJob({
      kind: 'creation',
      namespace: NS,
      image: 'builder',
      backoffLimit: 1,
      configHash: 'h',
      owner: { apiVersion: 'v1', kind: 'KataConfig', name: 'k', uid: 'u' },
      creationEnv: imageOf(data).creationEnv,
    });
    const container = (job.spec.template.spec.containers as { env: unknown[] }[])[0];
    assert.deepEqual(container?.env, [{ name: 'LIBVIRT_POOL', value: 'default' }]);
  });

  test('the other clouds are untouched by it', () => {
    assert.equal(imageKeyOf({ CLOUD_PROVIDER: 'aws' }), 'PODVM_AMI_ID');
    assert.equal(imageKeyOf({ CLOUD_PROVIDER: 'azure' }), 'AZURE_IMAGE_ID');
    assert.equal(imageKeyOf({ CLOUD_PROVIDER: 'gcp' }), 'PODVM_IMAGE_NAME');
    const r = validatePeerPodsConfig(cm({ CLOUD_PROVIDER: 'aws', LIBVIRT_URI: 'x' }), undefined);
    assert.ok(!r.problems.some((p) => p.key.startsWith('LIBVIRT')));
  });
});
