/**
 * `osc start --tee tdx` and the console: the dev cluster's TDX node advertising its key slots; the create
 * form showing the gates, the TEE, the slots and what a KataConfig would get as the gate is turned on (and
 * set to a value osc cannot read); the KataConfig page showing the gates, the TEE, kata-cc and the slots
 * used and free once a kata-cc pod runs.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import type { Browser, Page } from 'playwright-core';
import { FEATURE_GATES_CONFIGMAP } from '../../src/api/featuregates.ts';
import { KataConfigs } from '../../src/api/kataconfig.ts';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { ConfigMaps, type Pod, Pods } from '../../src/kube/resources.ts';
import { artifactsDir, launchBrowser, type OscStart, SKIP_BROWSER, startOsc } from '../support/browser.ts';

const LONG = 180_000;

describe('web console: confidential containers', { skip: SKIP_BROWSER && 'OSC_SKIP_BROWSER_TESTS=1' }, () => {
  const home = mkdtempSync(join(tmpdir(), 'osc-console-cc-'));
  const shots = artifactsDir('console-confidential');
  let osc: OscStart;
  let client: KubeClient;
  let browser: Browser;
  let page: Page;

  before(async () => {
    browser = await launchBrowser();
    osc = await startOsc(
      ['--workers', '2', '--tee', 'tdx', '--tee-nodes', 'worker-0', '--key-slots', '3', '--reboot-ms', '300', '--quiet'],
      home,
    );
    const kc = new KubeConfig();
    kc.loadFromFile(osc.kubeconfig);
    client = new KubeClient(kc);
    page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
  });

  after(async () => {
    await browser?.close();
    await client?.close();
    await osc?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  test('the create form shows the gates, the TEE, the key slots, and what the KataConfig would get, live', async () => {
    try {
      await page.goto(`${osc.consoleUrl}#/kataconfigs/~new`);
      const form = page.locator('[data-test=create-form]');
      await form.waitFor({ timeout: LONG });
      const panel = page.locator('[data-test=confidential]');
      // No ConfigMap yet: every gate at its default, and the form says where to turn confidential on.
      await panel
        .locator('[data-gate=confidential]')
        .filter({ hasText: /^false$/ })
        .waitFor({ timeout: LONG });
      assert.equal(await panel.locator('[data-gate=deploymentMode]').textContent(), 'DaemonSetFallback');
      await panel
        .locator('[data-test=tee]')
        .filter({ hasText: /^Intel TDX$/ })
        .waitFor({ timeout: LONG });
      const outlook = panel.locator('[data-test=confidential-outlook]');
      await outlook.filter({ hasText: /confidential containers are off: kata-cc is offered once/ }).waitFor({ timeout: LONG });
      const row = panel.locator('[data-test=key-slots] tr[data-node=worker-0]');
      assert.deepEqual(await row.locator('td').allTextContents(), ['worker-0', '0', '3', 'tdx.intel.com/keys (3)']);
      assert.equal(await panel.locator('[data-test=key-slots] tr[data-node=worker-1]').count(), 0, 'worker-1 has no TEE');

      // The gate turned on while the form is open: the panel follows, and names the nodes kata-cc would go to.
      await client.create(ConfigMaps, {
        metadata: { name: FEATURE_GATES_CONFIGMAP, namespace: OPERATOR_NAMESPACE },
        data: { confidential: 'true' },
      });
      await panel
        .locator('[data-gate=confidential]')
        .filter({ hasText: /^true$/ })
        .waitFor({ timeout: LONG });
      await outlook.filter({ hasText: /^kata-cc \(Intel TDX\) will be offered on worker-0/ }).waitFor({ timeout: LONG });
      assert.equal(await outlook.getAttribute('data-level'), 'note');
      // A value osc cannot read: the form warns before anything is created.
      await client.patch(ConfigMaps, FEATURE_GATES_CONFIGMAP, { data: { confidential: 'yes' } }, { namespace: OPERATOR_NAMESPACE });
      await outlook.filter({ hasText: /a feature gate cannot be read/ }).waitFor({ timeout: LONG });
      assert.equal(await outlook.getAttribute('data-level'), 'warning');
      await panel
        .locator('p.error')
        .filter({ hasText: /feature gate "confidential" .* is "yes": it must be one of true, false/ })
        .waitFor({ timeout: LONG });
      await page.screenshot({ path: join(shots, 'create-form.png'), fullPage: true });
      await client.patch(ConfigMaps, FEATURE_GATES_CONFIGMAP, { data: { confidential: 'true' } }, { namespace: OPERATOR_NAMESPACE });
    } catch (e) {
      await page.screenshot({ path: join(shots, 'create-failure.png'), fullPage: true });
      throw e;
    }
  });

  test('the gates, the TEE and the key slots on the KataConfig page', async () => {
    await client.create(KataConfigs, { metadata: { name: 'example-kataconfig' }, spec: {} });
    try {
      await page.goto(`${osc.consoleUrl}#/kataconfigs/example-kataconfig`);
      const panel = page.locator('[data-test=confidential]');
      await panel
        .locator('[data-gate=confidential]')
        .filter({ hasText: /^true$/ })
        .waitFor({ timeout: LONG });
      await panel
        .locator('[data-test=tee]')
        .filter({ hasText: /^Intel TDX$/ })
        .waitFor({ timeout: LONG });
      await page.locator('[data-test=runtimeclasses] [data-rc=kata-cc]').waitFor({ timeout: LONG });
      const pod: Pod = {
        metadata: { name: 'cc', namespace: 'default' },
        spec: { runtimeClassName: 'kata-cc', containers: [{ name: 'c', image: 'registry.example/app:1' }] } as Pod['spec'],
      };
      await client.create(Pods, pod);
      const row = panel.locator('[data-test=key-slots] tr[data-node=worker-0]');
      await row.locator('td:nth-child(2)').filter({ hasText: /^1$/ }).waitFor({ timeout: LONG });
      assert.equal(await row.locator('td:nth-child(3)').textContent(), '2', 'two of three slots free');
      assert.equal(await panel.locator('[data-test=key-slots] tr[data-node=worker-1]').count(), 0, 'worker-1 has no TEE');
      await page.screenshot({ path: join(shots, 'confidential.png'), fullPage: true });
    } catch (e) {
      await page.screenshot({ path: join(shots, 'failure.png'), fullPage: true });
      throw e;
    }
  });
});
