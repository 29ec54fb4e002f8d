/**
 * Peer pods' cloud credentials (docs/cloud-credentials.md): the simulated AWS account bites (keys that do
 * not exist, actions outside a policy), osc's CredentialsRequest asks for exactly what peer pods do, and
 * the order of the credential sources with the condition text for each missing piece.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { awsCredentialsFile, awsStsCredentialsFile, type CredentialsRequest } from '../../src/api/cloudcredential.ts';
import { AwsAccount, AwsError } from '../../src/devcluster/clouds/aws-account.ts';
import type { Secret } from '../../src/kube/resources.ts';
import {
  type CredentialsInput,
  chooseCredentials,
  credentialsWiring,
  desiredCredentialsRequest,
  PEER_PODS_AWS_ACTIONS,
  peerPodsAwsActions,
  peerPodsStatementEntries,
} from '../../src/peerpods/credentials.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const refusedWith = (code: string, fn: () => void) =>
  assert.throws(
    fn,
    (e: unknown) => e instanceof AwsError && e.code === code && e.message.startsWith(`An error occurred (${code}) when calling the `),
  );

describe('the simulated AWS account', () => {
  test('root can do anything; an unknown, a wrong or a rotated-away key is refused as AWS refuses it', () => {
    const account = new AwsAccount();
    const root = account.createUser('root');
    account.authorize(root, 'iam:CreateUser');
    account.authorize(root, 'ec2:DeleteVpc');
    refusedWith('AuthFailure', () => account.authorize({ accessKeyId: 'AKIAUNKNOWN', secretAccessKey: 'x' }, 'ec2:DescribeImages'));
    refusedWith('AuthFailure', () => account.authorize({ ...root, secretAccessKey: 'wrong' }, 'ec2:DescribeImages'));
    refusedWith('InvalidClientTokenId', () => account.authorize({ accessKeyId: 'AKIAUNKNOWN', secretAccessKey: 'x' }, 's3:PutObject'));
    const rotated = account.rotateKey('root');
    refusedWith('AuthFailure', () => account.authorize(root, 'ec2:DescribeImages'));
    account.authorize(rotated, 'ec2:DescribeImages');
    refusedWith('NoCredentialProviders', () => account.authorize(undefined, 'ec2:RunInstances'));
  });

  test("a key minted for osc's request may do every action peer pods do, and nothing else", () => {
    const account = new AwsAccount();
    const minted = account.createUser('peerpods', peerPodsStatementEntries());
    for (const action of [...PEER_PODS_AWS_ACTIONS.adaptor, ...PEER_PODS_AWS_ACTIONS.imageCreation, ...PEER_PODS_AWS_ACTIONS.imageDeletion])
      account.authorize(minted, action);
    for (const action of PEER_PODS_AWS_ACTIONS.bucket) account.authorize(minted, action, 'arn:aws:s3:::podvm-1a2b3c4d');
    for (const action of PEER_PODS_AWS_ACTIONS.bucketObjects) account.authorize(minted, action, 'arn:aws:s3:::podvm-1a2b3c4d/podvm.raw');
    for (const action of PEER_PODS_AWS_ACTIONS.vmimportRole)
      account.authorize(minted, action, `arn:aws:iam::${account.accountId}:role/vmimport`);
    // EC2 says UnauthorizedOperation, the other services AccessDenied; both name the action.
    for (const action of ['ec2:DeleteVpc', 'ec2:AuthorizeSecurityGroupIngress', 'ec2:CreateKeyPair', 'ec2:StopInstances'])
      refusedWith('UnauthorizedOperation', () => account.authorize(minted, action));
    refusedWith('AccessDenied', () => account.authorize(minted, 'iam:CreateUser'));
    refusedWith('AccessDenied', () => account.authorize(minted, 's3:ListAllMyBuckets'));
    refusedWith('AccessDenied', () => account.authorize(minted, 's3:CreateBucket', 'arn:aws:s3:::cluster-backups'));
    refusedWith('AccessDenied', () => account.authorize(minted, 's3:GetObject', 'arn:aws:s3:::cluster-backups/etcd.db'));
    refusedWith('AccessDenied', () => account.authorize(minted, 'iam:CreateRole', `arn:aws:iam::${account.accountId}:role/admin`));
    assert.match(
      (() => {
        try {
          account.authorize(minted, 'ec2:DeleteVpc');
        } catch (e) {
          return (e as Error).message;
        }
        return '';
      })(),
      /User: arn:aws:iam::123456789012:user\/peerpods is not authorized to perform: ec2:DeleteVpc/,
    );
  });

  test('the actions left out of the request are refused: listing the bucket, reading its objects', () => {
    const account = new AwsAccount();
    const minted = account.createUser('peerpods', peerPodsStatementEntries());
    assert.deepEqual(
      peerPodsAwsActions().filter((a) => a.startsWith('s3:')),
      ['s3:CreateBucket', 's3:DeleteBucket', 's3:DeleteObject', 's3:PutObject'],
    );
    refusedWith('AccessDenied', () => account.authorize(minted, 's3:ListBucket', 'arn:aws:s3:::podvm-1a2b3c4d'));
    refusedWith('AccessDenied', () => account.authorize(minted, 's3:GetObject', 'arn:aws:s3:::podvm-1a2b3c4d/podvm.raw'));
  });

  test('the Go SDK form of a refusal, as the adaptor reports it, names the call that needed the permission', () => {
    const account = new AwsAccount();
    const key = account.createUser('no-tags', [{ effect: 'Allow', action: ['ec2:RunInstances'], resource: '*' }]);
    account.authorize(key, 'ec2:RunInstances');
    const refused = (() => {
      try {
        account.authorize(key, 'ec2:CreateTags', '*', 'ec2:RunInstances');
      } catch (e) {
        return e as AwsError;
      }
      throw new Error('not refused');
    })();
    assert.match(
      refused.sdkMessage,
      /^operation error EC2: RunInstances, https response error StatusCode: 403, RequestID: [0-9a-f-]{36}, api error UnauthorizedOperation: You are not authorized to perform this operation\. User: arn:aws:iam::123456789012:user\/no-tags is not authorized to perform: ec2:CreateTags on resource: \*$/,
    );
    assert.deepEqual([...(account.allowed.get('no-tags') ?? [])], ['ec2:RunInstances'], 'only what was allowed is counted as used');
  });

  test('a role (ccoctl) is assumed only by the ServiceAccounts it trusts, with a token for openshift', () => {
    const account = new AwsAccount();
    const sa = 'system:serviceaccount:openshift-sandboxed-containers-operator:default';
    const arn = account.createRole('osc-peerpods', peerPodsStatementEntries(), [sa]);
    account.authorize({ roleArn: arn, webIdentity: { serviceAccount: sa, audience: 'openshift' } }, 'ec2:RunInstances');
    refusedWith('UnauthorizedOperation', () =>
      account.authorize({ roleArn: arn, webIdentity: { serviceAccount: sa, audience: 'openshift' } }, 'ec2:DeleteVpc'),
    );
    refusedWith('AccessDenied', () =>
      account.authorize(
        { roleArn: arn, webIdentity: { serviceAccount: 'system:serviceaccount:x:y', audience: 'openshift' } },
        'ec2:RunInstances',
      ),
    );
    refusedWith('AccessDenied', () =>
      account.authorize({ roleArn: arn, webIdentity: { serviceAccount: sa, audience: 'other' } }, 'ec2:RunInstances'),
    );
  });
});

describe("osc's CredentialsRequest and the credential order", () => {
  const secret = (data: Record<string, string>): Secret => ({
    metadata: { name: 'x', namespace: 'ns' },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
  });
  const minted = secret({ aws_access_key_id: 'AKIA1', aws_secret_access_key: 's', credentials: awsCredentialsFile('AKIA1', 's') });
  const role = secret({ credentials: awsStsCredentialsFile('arn:aws:iam::123456789012:role/osc') });
  const base: CredentialsInput = { ccoServed: true, mode: '', cloudProvider: 'aws' };
  const request = (conditions: { type: string; status: 'True' | 'False'; message: string }[] = []): CredentialsRequest => ({
    ...desiredCredentialsRequest('ns', ['default']),
    status: { provisioned: false, lastSyncGeneration: 0, conditions },
  });

  test('the request: in the CCO namespace, the Secret in osc namespace, S3 and IAM pinned to their resources', () => {
    const r = desiredCredentialsRequest('openshift-sandboxed-containers-operator', ['default', 'default']);
    assert.equal(r.metadata.namespace, 'openshift-cloud-credential-operator');
    assert.deepEqual(r.spec.secretRef, { name: 'cco-secret', namespace: 'openshift-sandboxed-containers-operator' });
    assert.deepEqual(r.spec.serviceAccountNames, ['default']);
    const entries = r.spec.providerSpec.statementEntries;
    assert.ok(
      entries.every((e) => e.effect === 'Allow' && !e.action.some((a) => a.includes('*'))),
      'no wildcard action',
    );
    assert.deepEqual(
      entries.map((e) => e.resource),
      ['*', 'arn:aws:s3:::podvm-*', 'arn:aws:s3:::podvm-*/*', 'arn:aws:iam::*:role/vmimport'],
    );
  });

  const cases: { name: string; input: CredentialsInput; source?: string; want: boolean; problem?: RegExp }[] = [
    {
      name: "an administrator's peer-pods-secret comes first",
      input: { ...base, adminSecret: secret({}), ccoSecret: minted },
      source: 'secret',
      want: false,
    },
    {
      name: 'no Cloud Credential Operator: only peer-pods-secret (its own checks report it)',
      input: { ...base, ccoServed: false },
      want: false,
    },
    {
      name: 'a cloud this build has no Cloud Credential Operator side for: no request',
      input: { ...base, cloudProvider: 'libvirt' },
      want: false,
    },
    { name: 'a role from ccoctl (STS)', input: { ...base, mode: 'Manual', ccoSecret: role }, source: 'sts', want: true },
    { name: 'keys minted by the CCO', input: { ...base, ccoSecret: minted, request: request() }, source: 'minted', want: true },
    {
      name: 'Manual mode and no Secret: ccoctl or peer-pods-secret',
      input: { ...base, mode: 'Manual', request: request() },
      want: true,
      problem: /Manual mode .*run ccoctl aws create-iam-roles .*or create peer-pods-secret/,
    },
    { name: 'the first pass: requesting', input: base, want: true, problem: /^requesting credentials from the Cloud Credential Operator/ },
    {
      name: 'the CCO cannot provision: its reason, and the fixes',
      input: {
        ...base,
        request: request([{ type: 'CredentialsProvisionFailure', status: 'True', message: 'failed to grab root cloud credentials' }]),
      },
      want: true,
      problem:
        /cannot provision .*CredentialsProvisionFailure: failed to grab root cloud credentials; fix the cluster's root credentials \(Secret kube-system\/aws-creds\) or create peer-pods-secret/,
    },
    {
      name: 'provisioning, nothing failed yet: waiting',
      input: { ...base, request: request([{ type: 'InsufficientCloudCreds', status: 'False', message: 'ok' }]) },
      want: true,
      problem: /^waiting for the Cloud Credential Operator to provision/,
    },
    {
      name: 'a Secret in neither form',
      input: { ...base, ccoSecret: secret({ token: 'x' }) },
      want: true,
      problem: /holds neither aws_access_key_id/,
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const choice = chooseCredentials(c.input);
      assert.equal(choice.source?.kind, c.source);
      assert.equal(choice.wantRequest, c.want);
      if (c.problem) assert.match(choice.problem ?? '', c.problem);
      else assert.equal(choice.problem, undefined);
    });
  }

  test("minted keys reach the adaptor under its own names, from the Secret; a role with OpenShift's projected token", () => {
    const m = credentialsWiring({ kind: 'minted' }, 'peer-pods-secret');
    assert.deepEqual(m.envFrom, []);
    assert.deepEqual(
      m.env.map((e) => [e.name, JSON.stringify(e.valueFrom)]),
      [
        ['AWS_ACCESS_KEY_ID', JSON.stringify({ secretKeyRef: { name: 'cco-secret', key: 'aws_access_key_id' } })],
        ['AWS_SECRET_ACCESS_KEY', JSON.stringify({ secretKeyRef: { name: 'cco-secret', key: 'aws_secret_access_key' } })],
      ],
    );
    const s = credentialsWiring({ kind: 'sts', roleArn: 'arn:aws:iam::1:role/r' }, 'peer-pods-secret');
    assert.deepEqual(s.env, [
      { name: 'AWS_ROLE_ARN', value: 'arn:aws:iam::1:role/r' },
      { name: 'AWS_WEB_IDENTITY_TOKEN_FILE', value: '/var/run/secrets/openshift/serviceaccount/token' },
    ]);
    assert.equal(JSON.stringify(s.volumes).includes('"audience":"openshift"'), true);
    assert.deepEqual(credentialsWiring({ kind: 'secret' }, 'peer-pods-secret').envFrom, [{ secretRef: { name: 'peer-pods-secret' } }]);
  });
});
