/**
 * The `osc` command against a bare control plane (no CRDs, no operator): clear failures for a missing
 * KataConfig API and refused credentials; the committed config/ manifests applied with kubectl; the
 * package's bin entries, from the source checkout and from a built package; the kubectl plugin.
 */

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { CCO_NAMESPACE } from '../../src/api/cloudcredential.ts';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { tokenKubeconfigText } from '../../src/devcluster/controlplane/kubectl.ts';
import { sccCRD } from '../../src/devcluster/scc/index.ts';
import { NAMES } from '../../src/install/manifests.ts';
import { CustomResourceDefinitions, Deployments, Namespaces, ValidatingWebhookConfigurations } from '../../src/kube/resources.ts';
import { runOsc as osc } from '../support/cli.ts';
import { useControlPlane } from '../support/controlplane.ts';

const root = join(import.meta.dirname, '..', '..');
const MISSING_CRD =
  'error: the KataConfig API is not installed in this cluster (kataconfigs.kataconfiguration.openshift.io); run "osc install" first\n';

/** Runs an executable to completion. */
function exec(
  cmd: string,
  args: string[],
  env: Record<string, string | undefined>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('osc against a cluster without the KataConfig API', () => {
  const ref = useControlPlane();
  const dir = mkdtempSync(join(tmpdir(), 'osc-cli-errors-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('status, status --watch, run and must-gather say the API is missing and what to do', async () => {
    const kubeconfig = ref.cp.kubeconfigPath;
    for (const args of [
      ['status'],
      ['status', '--watch'],
      ['status', '-o', 'json'],
      ['run', '--no-leader-elect'],
      ['must-gather', '--dest-dir', dir],
    ]) {
      const r = await osc([...args, '--kubeconfig', kubeconfig]);
      assert.equal(r.code, 1, args.join(' '));
      assert.equal(r.stderr, MISSING_CRD, args.join(' '));
      assert.equal(r.stdout, '', args.join(' '));
    }
  });

  test('KUBECONFIG is honoured when --kubeconfig is absent', async () => {
    const before = process.env.KUBECONFIG;
    process.env.KUBECONFIG = ref.cp.kubeconfigPath;
    try {
      const r = await osc(['status']);
      assert.equal(r.stderr, MISSING_CRD);
    } finally {
      if (before === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = before;
    }
  });

  test('uninstall: nothing to uninstall', async () => {
    const r = await osc(['uninstall', '--kubeconfig', ref.cp.kubeconfigPath]);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'error: osc is not installed in this cluster: nothing to uninstall\n');
  });

  test('refused credentials are called that', async () => {
    const cp = ref.cp;
    const kubeconfig = join(dir, 'bad-token');
    writeFileSync(kubeconfig, tokenKubeconfigText(cp.apiserverUrl, cp.caPem, 'not-a-valid-token'));
    for (const args of [['status'], ['install'], ['must-gather']]) {
      const r = await osc([...args, '--kubeconfig', kubeconfig]);
      assert.equal(r.code, 1);
      assert.equal(
        r.stderr,
        `error: the Kubernetes API at ${cp.apiserverUrl} refused our credentials: Unauthorized (check --kubeconfig / KUBECONFIG)\n`,
        args.join(' '),
      );
    }
  });

  test('the committed config/ manifests apply with kubectl; osc install then only completes them', async () => {
    // config/ is the OpenShift install, whose API server serves SecurityContextConstraints.
    await ref.cp.installCRDs([sccCRD()]);
    // An OpenShift installed without the Cloud Credential Operator capability has no namespace for the Role
    // of osc's CredentialsRequest: osc install says it skips it, and applies the rest.
    const preview = await osc(['install', '--dry-run=server', '--kubeconfig', ref.cp.kubeconfigPath]);
    assert.equal(preview.code, 0, preview.stderr);
    assert.match(
      preview.stdout,
      /^role\.rbac\.authorization\.k8s\.io\/osc-credentials-requests skipped: namespace openshift-cloud-credential-operator does not exist \(no Cloud Credential Operator: peer pods then need peer-pods-secret\)$/m,
    );
    assert.match(preview.stdout, /^deployment\.apps\/osc-controller-manager created \(dry run\)$/m);
    // Every other OpenShift has it, and config/ is for those.
    await ref.cp.client.create(Namespaces, { metadata: { name: CCO_NAMESPACE } });
    const applied = await ref.cp.kubectl(['apply', '-f', join(root, 'config')]);
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(applied.stdout, /^namespace\/openshift-sandboxed-containers-operator created$/m);
    assert.match(
      applied.stdout,
      /^customresourcedefinition\.apiextensions\.k8s\.io\/kataconfigs\.kataconfiguration\.openshift\.io created$/m,
    );
    assert.match(applied.stdout, /^deployment\.apps\/osc-controller-manager created$/m);
    assert.match(
      applied.stdout,
      /^mutatingwebhookconfiguration\.admissionregistration\.k8s\.io\/osc-mutating-webhook-configuration created$/m,
    );
    const c = ref.cp.client;
    assert.ok(await c.find(Deployments, NAMES.deployment, OPERATOR_NAMESPACE));
    const crd = await c.get(CustomResourceDefinitions, 'kataconfigs.kataconfiguration.openshift.io');
    assert.ok(crd.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True'));

    const r = await osc(['install', '--kubeconfig', ref.cp.kubeconfigPath]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^secret\/osc-webhook-server-cert ready/m);
    const vwc = (await c.get(ValidatingWebhookConfigurations, 'osc-validating-webhook-configuration')) as {
      webhooks: { clientConfig: { caBundle?: string } }[];
    };
    assert.ok(vwc.webhooks[0]?.clientConfig.caBundle, 'osc install adds the caBundle');

    const status = await osc(['status', '--kubeconfig', ref.cp.kubeconfigPath]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /^No KataConfig in this cluster\./);
  });

  test('bin/osc.js runs from the source checkout; bin/kubectl-kata.js is a kubectl plugin', async () => {
    const kubectl = ref.cp.binaries.kubectl;
    const pluginDir = join(dir, 'plugins');
    mkdirSync(pluginDir);
    symlinkSync(join(root, 'bin', 'kubectl-kata.js'), join(pluginDir, 'kubectl-kata'));
    // `#!/usr/bin/env node` must find Node 24: the project's own, first on the PATH.
    const env = {
      ...process.env,
      PATH: [pluginDir, dirname(process.execPath), dirname(kubectl), process.env.PATH].join(':'),
      KUBECONFIG: ref.cp.kubeconfigPath,
    };
    const version = await exec(join(root, 'bin', 'osc.js'), ['--version'], env);
    assert.equal(version.code, 0, version.stderr);
    assert.match(version.stdout, /^\d+\.\d+\.\d+\n$/);

    const list = await exec(kubectl, ['plugin', 'list'], env);
    assert.match(list.stdout, /kubectl-kata/, list.stderr);
    const help = await exec(kubectl, ['kata', 'status', '--help'], env);
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^Usage: kubectl kata status \[options\]/);
    const status = await exec(kubectl, ['kata', 'status'], env);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /^No KataConfig in this cluster\./);
    const bad = await exec(kubectl, ['kata', 'status', '--output', 'xml'], env);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /Allowed choices are text, json, yaml/);
  });

  test('bin/osc.js runs a built package (dist/) when there is one', async () => {
    // A package as the image holds it: bin/, dist/ (npm run build), package.json, node_modules, and no
    // src/, so that only dist/ can have run.
    const pkg = join(dir, 'pkg');
    mkdirSync(pkg);
    cpSync(join(root, 'bin'), join(pkg, 'bin'), { recursive: true });
    cpSync(join(root, 'package.json'), join(pkg, 'package.json'));
    symlinkSync(join(root, 'node_modules'), join(pkg, 'node_modules'));
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    // Emits even if another part of the tree is mid-change and does not type-check.
    await exec(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', join(pkg, 'dist')], process.env);
    const env = { ...process.env, PATH: [dirname(process.execPath), process.env.PATH].join(':'), KUBECONFIG: ref.cp.kubeconfigPath };
    const r = await exec(join(pkg, 'bin', 'osc.js'), ['status'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^No KataConfig in this cluster\./);
  });
});
