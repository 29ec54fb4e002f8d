/**
 * The dev cluster's Cloud Credential Operator against the real one's rules, with CredentialsRequests made
 * by hand (no osc): the root credentials annotated with what they can do; a target namespace that does not
 * exist; root credentials that can neither mint nor pass through (InsufficientCloudCreds); default mode
 * falling back to passthrough; explicit Mint mode (a root rotation rotates nothing minted, deleting the
 * Secret does) and its AWS refusals; Passthrough mode following the root credentials.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  AWS_ROOT_SECRET,
  CCO_NAMESPACE,
  CLOUD_CREDENTIAL_NAME,
  CloudCredentials,
  type CredentialsMode,
  type CredentialsRequest,
  CredentialsRequests,
  ROOT_CREDENTIALS_MODE_ANNOTATION,
  type StatementEntry,
} from '../../src/api/cloudcredential.ts';
import { ROOT_USER } from '../../src/devcluster/cco/index.ts';
import { Namespaces, type Secret, Secrets } from '../../src/kube/resources.ts';
import { useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const LONG = { timeoutMs: 60_000 };
const STATEMENTS: StatementEntry[] = [{ effect: 'Allow', action: ['ec2:DescribeInstances', 'ec2:RunInstances'], resource: '*' }];
const decode = (s: Secret | undefined, key: string) => Buffer.from(s?.data?.[key] ?? '', 'base64').toString('utf8');

const request = (name: string, namespace: string): CredentialsRequest =>
  ({
    apiVersion: 'cloudcredential.openshift.io/v1',
    kind: 'CredentialsRequest',
    metadata: { name, namespace: CCO_NAMESPACE },
    spec: {
      secretRef: { name: `${name}-creds`, namespace },
      providerSpec: { apiVersion: 'cloudcredential.openshift.io/v1', kind: 'AWSProviderSpec', statementEntries: STATEMENTS },
    },
  }) as CredentialsRequest;

describe("the dev cluster's Cloud Credential Operator does what the real one does", () => {
  const cluster = useDevCluster({ workers: 1, platform: 'AWS', rebootMs: 300 });
  const c = () => cluster.dev.client;
  const get = (name: string) => c().find(CredentialsRequests, name, CCO_NAMESPACE) as Promise<CredentialsRequest | undefined>;
  const cond = async (name: string, type: string) => (await get(name))?.status?.conditions?.find((x) => x.type === type);
  const root = () => c().get(Secrets, AWS_ROOT_SECRET.name, AWS_ROOT_SECRET.namespace);
  const rootMode = async () => (await root()).metadata.annotations?.[ROOT_CREDENTIALS_MODE_ANNOTATION];
  const setMode = (credentialsMode: CredentialsMode) =>
    c().patch(CloudCredentials, CLOUD_CREDENTIAL_NAME, { spec: { credentialsMode } }, { type: 'merge' });
  /** The administrator changes what the root IAM user may do and rotates its key (the annotator looks again). */
  const rootPolicy = async (policy: StatementEntry[] | undefined) => {
    if (policy) cluster.dev.awsAccount.putUserPolicy(ROOT_USER, policy);
    else cluster.dev.awsAccount.putUserPolicy(ROOT_USER, [{ effect: 'Allow', action: ['*'], resource: '*' }]);
    await cluster.dev.cco.rotateRootCredentials();
  };
  const secretOf = (name: string, namespace: string) => c().find(Secrets, `${name}-creds`, namespace);

  test('a missing target namespace: MissingTargetNamespace until it exists, then minted', async () => {
    assert.equal(await rootMode(), 'mint', 'root credentials that may manage IAM users are marked mint');
    await c().create(CredentialsRequests, request('early', 'not-yet'));
    const missing = await waitFor(
      async () =>
        (await cond('early', 'MissingTargetNamespace'))?.status === 'True' ? cond('early', 'MissingTargetNamespace') : undefined,
      {
        ...LONG,
        message: 'MissingTargetNamespace',
      },
    );
    assert.equal(missing?.reason, 'NamespaceMissing');
    assert.equal(missing?.message, 'target namespace not-yet not found');
    assert.notEqual((await get('early'))?.status?.provisioned, true);
    await c().create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'not-yet' } });
    await waitFor(async () => (await get('early'))?.status?.provisioned === true, {
      ...LONG,
      message: 'provisioned once the namespace exists',
    });
    const found = await cond('early', 'MissingTargetNamespace');
    assert.deepEqual([found?.status, found?.reason, found?.message], ['False', 'NamespaceExists', 'target namespace not-yet found']);
    assert.match(decode(await secretOf('early', 'not-yet'), 'aws_access_key_id'), /^AKIA/);
  });

  test('Mint mode: a root rotation rotates nothing minted; deleting the Secret makes a new key and deletes the old', async () => {
    await setMode('Mint');
    await waitFor(async () => (await rootMode()) === 'mint', LONG);
    const user = (await get('early'))?.status?.providerStatus?.user ?? '';
    const key = decode(await secretOf('early', 'not-yet'), 'aws_access_key_id');
    await cluster.dev.cco.rotateRootCredentials();
    const version = (await root()).metadata.resourceVersion;
    await waitFor(async () => (await get('early'))?.status?.lastSyncCloudCredsSecretResourceVersion === version, {
      ...LONG,
      message: 'synced',
    });
    assert.equal(decode(await secretOf('early', 'not-yet'), 'aws_access_key_id'), key);
    assert.deepEqual(cluster.dev.awsAccount.keyIds(user), [key]);
    await c().delete(Secrets, 'early-creds', { namespace: 'not-yet' });
    const next = await waitFor(
      async () => {
        const k = decode(await secretOf('early', 'not-yet'), 'aws_access_key_id');
        return k && k !== key ? k : undefined;
      },
      { ...LONG, message: 'a new key' },
    );
    assert.deepEqual(cluster.dev.awsAccount.keyIds(user), [next], 'the old key deleted');
  });

  test('Mint mode is forced, unchecked: root credentials that may not manage users fail with AWS error', async () => {
    await rootPolicy([{ effect: 'Allow', action: ['ec2:*'], resource: '*' }]);
    assert.equal(await rootMode(), 'mint');
    await c().create(CredentialsRequests, request('forced', 'not-yet'));
    const failed = await waitFor(
      async () =>
        (await cond('forced', 'CredentialsProvisionFailure'))?.status === 'True'
          ? cond('forced', 'CredentialsProvisionFailure')
          : undefined,
      { ...LONG, message: 'CredentialsProvisionFailure' },
    );
    assert.match(
      failed?.message ?? '',
      /^failed to grant creds: error syncing creds in mint-mode: AWS Error: AccessDenied: User: arn:aws:iam::123456789012:user\/cluster-root is not authorized to perform: iam:CreateUser/,
    );
    assert.equal((await get('forced'))?.status?.provisioned, false);
    await c().delete(CredentialsRequests, 'forced', { namespace: CCO_NAMESPACE });
    await waitFor(async () => !(await get('forced')), { ...LONG, message: 'the failed request deleted' });
  });

  test('default mode: root credentials that can neither mint nor pass through are InsufficientCloudCreds', async () => {
    await setMode('');
    await rootPolicy([{ effect: 'Allow', action: ['s3:ListAllMyBuckets'], resource: '*' }]);
    await waitFor(async () => (await rootMode()) === 'insufficient', { ...LONG, message: 'root marked insufficient' });
    await c().create(CredentialsRequests, request('weak', 'not-yet'));
    const c1 = await waitFor(
      async () => ((await cond('weak', 'InsufficientCloudCreds'))?.status === 'True' ? cond('weak', 'InsufficientCloudCreds') : undefined),
      { ...LONG, message: 'InsufficientCloudCreds' },
    );
    assert.deepEqual([c1?.reason, c1?.message], ['CloudCredsInsufficient', 'cloud creds are insufficient to satisfy CredentialsRequest']);
    assert.equal(await secretOf('weak', 'not-yet'), undefined);
    // What the requests ask, and no more: the root credentials are passed through.
    await rootPolicy(STATEMENTS);
    await waitFor(async () => (await rootMode()) === 'passthrough', { ...LONG, message: 'root marked passthrough' });
    await waitFor(async () => (await get('weak'))?.status?.provisioned === true, { ...LONG, message: 'provisioned by passthrough' });
    const cleared = await cond('weak', 'InsufficientCloudCreds');
    assert.deepEqual([cleared?.status, cleared?.reason], ['False', 'CloudCredsSufficient']);
    assert.equal(decode(await secretOf('weak', 'not-yet'), 'aws_access_key_id'), decode(await root(), 'aws_access_key_id'));
    assert.equal((await get('weak'))?.status?.providerStatus?.user, undefined, 'no user minted');
  });

  test('Passthrough mode: the Secret follows the root credentials; deleting the request leaves the root user', async () => {
    await setMode('Passthrough');
    await rootPolicy(undefined);
    await waitFor(async () => (await rootMode()) === 'passthrough', LONG);
    const rotated = await cluster.dev.cco.rotateRootCredentials();
    await waitFor(async () => decode(await secretOf('weak', 'not-yet'), 'aws_access_key_id') === rotated, {
      ...LONG,
      message: 'the passed-through Secret holds the rotated root key',
    });
    await c().delete(CredentialsRequests, 'weak', { namespace: CCO_NAMESPACE });
    await waitFor(async () => !(await get('weak')) && !(await secretOf('weak', 'not-yet')), {
      ...LONG,
      message: 'request and Secret gone',
    });
    assert.ok(cluster.dev.awsAccount.hasUser(ROOT_USER), 'the root user stays');
  });
});
