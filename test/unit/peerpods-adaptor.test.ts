/**
 * The cloud-api-adaptor DaemonSet on the administrator's terms: the digest on its pods covers only what the
 * adaptor reads (so an edit of anything else restarts nothing), caaUpdateStrategy is its update strategy,
 * the cluster's TLS profile reaches it in the variables it takes, and the status counts the pods that run
 * an older configuration.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import {
  adaptorConfigHash,
  adaptorOutdatedCondition,
  adaptorTLSEnv,
  CONFIG_HASH_ANNOTATION,
  desiredDaemonSet,
} from '../../src/controllers/peerpods/adaptor.ts';
import { DEFAULT_IMAGES } from '../../src/controllers/peerpods/desired.ts';
import type { PeerPodsObserved } from '../../src/controllers/peerpods/observed.ts';
import { planPeerPods } from '../../src/controllers/peerpods/plan.ts';
import type { ConfigMap, DaemonSet, Secret } from '../../src/kube/resources.ts';
import { adaptorData } from '../../src/peerpods/adaptor-keys.ts';
import { validatePeerPodsConfig } from '../../src/peerpods/config.ts';

const NS = 'openshift-sandboxed-containers-operator';
const cm = (data: Record<string, string>): ConfigMap => ({ metadata: { name: 'peer-pods-cm', namespace: NS }, data });
const secret = (key = 's'): Secret => ({
  metadata: { name: 'peer-pods-secret', namespace: NS },
  stringData: { AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE', AWS_SECRET_ACCESS_KEY: key },
});
const aws = {
  CLOUD_PROVIDER: 'aws',
  AWS_REGION: 'us-east-2',
  AWS_SUBNET_ID: 'subnet-0a1b2c3d4e5f67890',
  AWS_VPC_ID: 'vpc-0a1b2c3d4e5f67890',
  AWS_SG_IDS: 'sg-0a1b2c3d4e5f67890',
  PODVM_AMI_ID: 'ami-0123456789abcdef0',
  PEERPODS_LIMIT_PER_NODE: '10',
};
const gcp = { CLOUD_PROVIDER: 'gcp', GCP_PROJECT_ID: 'my-project-123', GCP_ZONE: 'us-central1-a', PODVM_IMAGE_NAME: 'podvm' };

describe('the adaptor configuration digest covers what the adaptor reads, nothing else', () => {
  const base = adaptorConfigHash(cm(aws), secret());
  const hash = (over: Record<string, string | undefined>, s = secret()) =>
    adaptorConfigHash(cm({ ...aws, ...(over as Record<string, string>) }), s);

  test('an edit of a key only osc or the image job reads restarts nothing', () => {
    for (const over of [
      { PEERPODS_LIMIT_PER_NODE: '4' },
      { DEFAULT_POD_INITDATA: 'H4sI' },
      { AWS_VPC_ID: 'vpc-0ffffffffffffffff' },
      // osc sets these on the container from the cluster's profile: the ConfigMap's never reach the adaptor.
      { TLS_MIN_VERSION: 'VersionTLS13', TLS_CIPHER_SUITES: 'TLS_AES_128_GCM_SHA256' },
      // Another cloud's keys: AWS's adaptor never reads them.
      { AZURE_REGION: 'eastus', GCP_ZONE: 'us-central1-a' },
    ]) {
      assert.equal(hash(over), base, JSON.stringify(over));
    }
    // The order of the keys is not a change either.
    assert.equal(adaptorConfigHash(cm(Object.fromEntries(Object.entries(aws).reverse())), secret()), base);
  });

  test('an edit the adaptor reads, an unknown key, or new credentials restart it', () => {
    for (const over of [
      { PROXY_TIMEOUT: '6m' },
      { PODVM_AMI_ID: 'ami-0fedcba9876543210' },
      { INITDATA: 'H4sI' },
      { TAGS: 'a=b' },
      // osc does not know it: the adaptor (or a library it links) may read it.
      { HTTPS_PROXY: 'http://proxy:3128' },
    ]) {
      assert.notEqual(hash(over), base, JSON.stringify(over));
    }
    assert.notEqual(hash({}, secret('s2')), base);
  });

  test('TLS_* keys in peer-pods-cm are reported as ignored (osc sets them from the cluster profile)', () => {
    const v = validatePeerPodsConfig(cm({ ...aws, TLS_MIN_VERSION: 'VersionTLS13' }), secret());
    assert.deepEqual(v.problems, []);
    assert.deepEqual(
      v.warnings.map((w) => w.message),
      [
        "TLS_MIN_VERSION in peer-pods-cm is ignored: osc gives the adaptor the cluster's TLS security profile (the APIServer named cluster)",
      ],
    );
  });

  test("each cloud's own exceptions: PODVM_INSTANCE_TYPES is osc's on Google Cloud, the adaptor's on AWS", () => {
    assert.equal(adaptorData({ ...gcp, PODVM_INSTANCE_TYPES: 'e2-medium' }).PODVM_INSTANCE_TYPES, undefined);
    assert.equal(adaptorData({ ...aws, PODVM_INSTANCE_TYPES: 't3.small' }).PODVM_INSTANCE_TYPES, 't3.small');
    assert.equal(adaptorData({ ...gcp, GCP_DISK_TYPE: 'pd-ssd' }).GCP_DISK_TYPE, 'pd-ssd');
    assert.equal(adaptorData({ ...gcp, AWS_SG_IDS: 'sg-1' }).AWS_SG_IDS, undefined);
  });
});

const owner = { apiVersion: 'kataconfiguration.openshift.io/v1', kind: 'KataConfig', name: 'k', uid: 'u' };
const ds = (over: Parameters<typeof desiredDaemonSet>[0] extends infer O ? Partial<O> : never = {}) =>
  desiredDaemonSet({ namespace: NS, image: 'caa:1', configHash: 'h', placement: { nodeSelector: {}, tolerations: [] }, owner, ...over });
const env = (d: DaemonSet) =>
  ((d.spec.template.spec.containers as { env: { name: string; value?: string }[] }[])[0]?.env ?? []).filter((e) =>
    e.name.startsWith('TLS_'),
  );

describe('caaUpdateStrategy', () => {
  test('RollingUpdate (one node at a time) by default, OnDelete when the gate says so', () => {
    assert.deepEqual(ds().spec.updateStrategy, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } });
    assert.deepEqual(ds({ strategy: 'OnDelete' }).spec.updateStrategy, { type: 'OnDelete' });
    // A change of strategy is a change of the desired DaemonSet (it is rewritten), not of its pods.
    assert.notEqual(
      ds().metadata.annotations?.['peerpods.kataconfiguration.openshift.io/spec-hash'],
      ds({ strategy: 'OnDelete' }).metadata.annotations?.['peerpods.kataconfiguration.openshift.io/spec-hash'],
    );
    assert.deepEqual(ds().spec.template, ds({ strategy: 'OnDelete' }).spec.template);
  });

  test('the plan applies the strategy it observes', () => {
    const kc = {
      metadata: { name: 'k', uid: 'u', finalizers: ['kataconfiguration.openshift.io/peerpods-finalizer'] },
      spec: { enablePeerPods: true },
    } as KataConfig;
    const o: PeerPodsObserved = {
      key: 'k',
      kataConfigs: [kc],
      supportsPeerPods: true,
      placement: { nodeSelector: {}, tolerations: [] },
      nodes: [],
      configMap: cm(aws),
      secret: secret(),
      remotePods: [],
      configMapAwaited: false,
      jobsAwaited: { creation: false, deletion: false },
      caaUpdateStrategy: 'OnDelete',
      options: { namespace: NS, images: DEFAULT_IMAGES, imageJobBackoffLimit: 1, blockedRecheckMs: 15_000 },
    };
    const written = planPeerPods(o, new Date()).writes.find((w) => w.op === 'apply' && w.resource.kind === 'DaemonSet');
    assert.ok(written?.op === 'apply');
    const d = written.object as DaemonSet;
    assert.deepEqual(d.spec.updateStrategy, { type: 'OnDelete' });
    assert.equal(d.spec.template.metadata?.annotations?.[CONFIG_HASH_ANNOTATION], adaptorConfigHash(cm(aws), secret()));
  });
});

describe("the cluster's TLS security profile, as the adaptor takes it", () => {
  const intermediate = [
    'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256',
    'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256',
    'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384',
    'TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384',
    'TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256',
    'TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256',
  ].join(',');
  const vars = (e: { name: string; value: string }[]) => Object.fromEntries(e.map((x) => [x.name, x.value]));

  test('Intermediate (also with no profile): TLS 1.2 with its ECDHE suites by IANA name, the DHE ones Go lacks left out', () => {
    assert.deepEqual(vars(adaptorTLSEnv(undefined)), { TLS_MIN_VERSION: 'VersionTLS12', TLS_CIPHER_SUITES: intermediate });
    assert.deepEqual(vars(adaptorTLSEnv({ type: 'Intermediate' })), { TLS_MIN_VERSION: 'VersionTLS12', TLS_CIPHER_SUITES: intermediate });
    assert.deepEqual(env(ds()), adaptorTLSEnv(undefined));
  });

  test('Modern: TLS 1.3 and no suites (the adaptor refuses suites with TLS 1.3)', () => {
    assert.deepEqual(vars(adaptorTLSEnv({ type: 'Modern' })), { TLS_MIN_VERSION: 'VersionTLS13' });
  });

  test('Old: raised to TLS 1.2 (the adaptor refuses 1.0 and 1.1), with the CBC suites Go has', () => {
    const old = vars(adaptorTLSEnv({ type: 'Old' }));
    assert.equal(old.TLS_MIN_VERSION, 'VersionTLS12');
    const suites = old.TLS_CIPHER_SUITES?.split(',') ?? [];
    assert.ok(suites.includes('TLS_RSA_WITH_3DES_EDE_CBC_SHA') && suites.includes('TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256'));
    assert.ok(!suites.some((s) => s.includes('DHE_RSA') && !s.includes('ECDHE')), 'no DHE suite');
    assert.ok(!suites.includes('TLS_AES_128_GCM_SHA256'), 'no TLS 1.3 suite');
  });

  test('Custom: its own minimum and suites; a list Go has none of allows TLS 1.3 only; an unreadable one keeps the current', () => {
    assert.deepEqual(
      vars(
        adaptorTLSEnv({
          type: 'Custom',
          custom: { minTLSVersion: 'VersionTLS12', ciphers: ['ECDHE-RSA-AES256-GCM-SHA384', 'TLS_AES_128_GCM_SHA256'] },
        }),
      ),
      { TLS_MIN_VERSION: 'VersionTLS12', TLS_CIPHER_SUITES: 'TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384' },
    );
    assert.deepEqual(
      vars(adaptorTLSEnv({ type: 'Custom', custom: { minTLSVersion: 'VersionTLS12', ciphers: ['DHE-RSA-AES128-GCM-SHA256'] } })),
      {
        TLS_MIN_VERSION: 'VersionTLS13',
      },
    );
    const current = [{ name: 'TLS_MIN_VERSION', value: 'VersionTLS13' }];
    assert.deepEqual(adaptorTLSEnv({ type: 'Paranoid' }, current), current);
    assert.deepEqual(vars(adaptorTLSEnv({ type: 'Paranoid' })), { TLS_MIN_VERSION: 'VersionTLS12', TLS_CIPHER_SUITES: intermediate });
  });
});

describe('PeerPodsAdaptorOutdated', () => {
  const withStatus = (strategy: 'RollingUpdate' | 'OnDelete', status: Record<string, number>, generation = 2): DaemonSet => {
    const d = ds({ strategy });
    return { ...d, metadata: { ...d.metadata, generation }, status };
  };

  test('OnDelete: how many pods run an older configuration, and to delete them', () => {
    const c = adaptorOutdatedCondition(
      withStatus('OnDelete', { observedGeneration: 2, currentNumberScheduled: 3, desiredNumberScheduled: 3, updatedNumberScheduled: 1 }),
      NS,
    );
    assert.equal(c?.type, 'PeerPodsAdaptorOutdated');
    assert.equal(c?.status, 'True');
    assert.equal(c?.reason, 'AdaptorPodsPendingDeletion');
    assert.match(
      c?.message ?? '',
      /^2 of 3 cloud-api-adaptor pods \(DaemonSet openshift-sandboxed-containers-operator\/osc-caa-ds\) run an older configuration; caaUpdateStrategy is OnDelete, so each keeps it until deleted: delete them to apply it/,
    );
  });

  test('RollingUpdate: no condition (the DaemonSet replaces them itself); all updated: none; a status not caught up: unchanged', () => {
    const rolling = adaptorOutdatedCondition(
      withStatus('RollingUpdate', { observedGeneration: 2, currentNumberScheduled: 2, updatedNumberScheduled: 1 }),
      NS,
    );
    assert.equal(rolling, null, 'a rolling update rewrites no KataConfig status');
    assert.equal(
      adaptorOutdatedCondition(withStatus('OnDelete', { observedGeneration: 2, currentNumberScheduled: 2, updatedNumberScheduled: 2 }), NS),
      null,
    );
    assert.equal(
      adaptorOutdatedCondition(withStatus('OnDelete', { observedGeneration: 1, currentNumberScheduled: 2, updatedNumberScheduled: 0 }), NS),
      undefined,
    );
    assert.equal(adaptorOutdatedCondition(undefined, NS), null);
  });
});
