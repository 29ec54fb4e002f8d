/**
 * The pod VM image jobs' failure injection on every cloud osc drives besides AWS (whose rows are in
 * peerpods-config.test.ts and peerpods-image-deletion.test.ts): one row per cloud, each on a dev cluster of
 * that cloud. `osc.dev/fail-podvm-image-creation` fails the creation job: PodVMImageJobFailed names the
 * cloud's image key, and deleting the job after the fix builds the image; `-deletion` fails the
 * deletion job: the KataConfig's removal is held (the image must not leak) until the cause is cleared.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { OPERATOR_NAMESPACE, PEER_PODS_CM, PEER_PODS_SECRET, PODVM_IMAGE_CREATION_JOB } from '../../src/api/names.ts';
import { PEERPODS_FINALIZER } from '../../src/controllers/peerpods/desired.ts';
import { SimulatedAzure } from '../../src/devcluster/clouds/azure.ts';
import { SimulatedGcp } from '../../src/devcluster/clouds/gcp.ts';
import { FAIL_IMAGE_CREATION_ANNOTATION, FAIL_IMAGE_DELETION_ANNOTATION } from '../../src/devcluster/clouds/image-jobs.ts';
import type { PeerPodsCloud } from '../../src/devcluster/clouds/index.ts';
import { ConfigMaps, Jobs, Pods, Secrets } from '../../src/kube/resources.ts';
import { type RunningOperator, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const NS = OPERATOR_NAMESPACE;
const KC = 'example-kataconfig';

interface Row {
  platform: 'Azure' | 'GCP';
  imageKey: string;
  /** The cloud's refusals, as its API words them. */
  creationError: string;
  deletionError: string;
  /** peer-pods-cm (image key empty: osc builds it) and peer-pods-secret, from the simulated account. */
  config(cloud: PeerPodsCloud): { data: Record<string, string>; secret: Record<string, string> };
  image: RegExp;
}

const rows: Row[] = [
  {
    platform: 'Azure',
    imageKey: 'AZURE_IMAGE_ID',
    creationError:
      "AuthorizationFailed: The client does not have authorization to perform action 'Microsoft.Compute/galleries/images/versions/write'",
    deletionError:
      "AuthorizationFailed: The client does not have authorization to perform action 'Microsoft.Compute/galleries/images/versions/delete'",
    config(cloud) {
      assert.ok(cloud instanceof SimulatedAzure);
      const a = cloud.account;
      const sp = cloud.createServicePrincipal();
      return {
        data: {
          CLOUD_PROVIDER: 'azure',
          AZURE_SUBSCRIPTION_ID: a.subscriptionId,
          AZURE_REGION: a.region,
          AZURE_RESOURCE_GROUP: a.resourceGroup,
          AZURE_SUBNET_ID: a.subnetId,
          AZURE_NSG_ID: a.nsgId,
          AZURE_IMAGE_ID: '',
        },
        secret: { AZURE_CLIENT_ID: sp.clientId, AZURE_CLIENT_SECRET: sp.clientSecret, AZURE_TENANT_ID: sp.tenantId },
      };
    },
    image: /^\/subscriptions\/.+\/galleries\/.+\/versions\/\d+\.\d+\.\d+$/,
  },
  {
    platform: 'GCP',
    imageKey: 'PODVM_IMAGE_NAME',
    creationError: "googleapi: Error 403: Required 'compute.images.create' permission for 'projects/x/global/images/podvm', forbidden",
    deletionError: "googleapi: Error 403: Required 'compute.images.delete' permission for 'projects/x/global/images/podvm', forbidden",
    config(cloud) {
      assert.ok(cloud instanceof SimulatedGcp);
      const a = cloud.account;
      return {
        data: {
          CLOUD_PROVIDER: 'gcp',
          GCP_PROJECT_ID: a.projectId,
          GCP_ZONE: `${a.region}-a`,
          GCP_NETWORK: `global/networks/${a.network}`,
          PODVM_IMAGE_NAME: '',
        },
        secret: { GCP_CREDENTIALS: cloud.createServiceAccountKey() },
      };
    },
    image: /^podvm-image-[0-9a-f]{8}$/,
  },
];

const cond = (kc: KataConfig | undefined, type: string) => kc?.status?.conditions?.find((c) => c.type === type);

for (const row of rows) {
  describe(`pod VM image job failures on ${row.platform}`, () => {
    const cluster = useDevCluster({ workers: 1, platform: row.platform, rebootMs: 300 });
    let op: RunningOperator;
    const c = () => cluster.dev.client;
    const cloud = () => cluster.dev.cloud;
    const imageId = async () => (await c().get(ConfigMaps, PEER_PODS_CM, NS)).data?.[row.imageKey] ?? '';
    const annotate = (annotations: Record<string, string | null>) =>
      c().patch(ConfigMaps, PEER_PODS_CM, { metadata: { annotations } }, { namespace: NS });
    const kcWith = (type: string) =>
      waitFor(
        async () => {
          const k = await c().find(KataConfigs, KC);
          return cond(k, type)?.status === 'True' ? k : undefined;
        },
        { timeoutMs: 180_000, message: `${type} on the KataConfig` },
      );

    before(async () => {
      op = await startOperator(cluster.dev);
    });
    after(() => op?.stop());

    test("a failed creation is reported naming the cloud's image key; deleting the job after the fix builds the image", async () => {
      const { data, secret } = row.config(cloud());
      await c().create(Secrets, { metadata: { name: PEER_PODS_SECRET, namespace: NS }, stringData: secret });
      await c().create(ConfigMaps, {
        metadata: { name: PEER_PODS_CM, namespace: NS, annotations: { [FAIL_IMAGE_CREATION_ANNOTATION]: row.creationError } },
        data,
      });
      await c().create(KataConfigs, { metadata: { name: KC }, spec: { enablePeerPods: true } });
      const failed = await kcWith('PodVMImageJobFailed');
      const f = cond(failed, 'PodVMImageJobFailed');
      assert.equal(f?.reason, 'ImageCreationFailed');
      assert.match(
        f?.message ?? '',
        /^Job osc-podvm-image-creation failed \(BackoffLimitExceeded: Job has reached the specified backoff limit\)/,
      );
      assert.match(f?.message ?? '', new RegExp(`or set ${row.imageKey} to an existing image$`));
      const jobPods = (await c().list(Pods, { namespace: NS, labelSelector: `job-name=${PODVM_IMAGE_CREATION_JOB}` })).items;
      // One attempt and one retry (the kata rollout's drain of the node may have deleted the first pod since).
      assert.equal((await c().get(Jobs, PODVM_IMAGE_CREATION_JOB, NS)).status?.failed, 2);
      assert.ok(jobPods.length >= 1);
      for (const p of jobPods) {
        const t = (p.status?.containerStatuses as { state?: { terminated?: { message?: string } } }[] | undefined)?.[0]?.state?.terminated;
        assert.equal(t?.message, row.creationError, "the cloud's refusal is the pod's termination message");
      }
      assert.equal(await imageId(), '');
      assert.equal(cloud().stats.failures, 2);
      assert.equal(cloud().images.size, 0);

      await annotate({ [FAIL_IMAGE_CREATION_ANNOTATION]: null });
      await c().delete(Jobs, PODVM_IMAGE_CREATION_JOB, { namespace: NS });
      const done = await kcWith('PodVMImageJobCompleted');
      const image = await imageId();
      assert.match(image, row.image);
      assert.ok(cloud().images.has(image));
      assert.equal(cond(done, 'PodVMImageJobFailed')?.status, 'False');
    });

    test('a failed deletion holds the removal until the cause is cleared; then the image is deleted', async () => {
      const image = await imageId();
      await annotate({ [FAIL_IMAGE_DELETION_ANNOTATION]: row.deletionError });
      await c().delete(KataConfigs, KC);
      const held = await kcWith('PodVMImageJobFailed');
      assert.equal(cond(held, 'PodVMImageJobFailed')?.reason, 'ImageDeletionFailed');
      assert.match(cond(held, 'PodVMImageJobFailed')?.message ?? '', /^Job osc-podvm-image-deletion failed/);
      assert.ok(held?.metadata.finalizers?.includes(PEERPODS_FINALIZER), 'the removal waits');
      assert.ok(cloud().images.has(image), 'the image is still there');
      assert.equal(await imageId(), image);

      await annotate({ [FAIL_IMAGE_DELETION_ANNOTATION]: null });
      await waitFor(async () => (await c().find(KataConfigs, KC)) === undefined, { timeoutMs: 180_000, message: 'the KataConfig removed' });
      assert.equal(cloud().images.has(image), false, 'the image deleted from the cloud');
      assert.equal(await imageId(), '');
    });
  });
}
