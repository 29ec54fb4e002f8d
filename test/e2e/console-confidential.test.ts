/**
 * `osc start --tee tdx` and the console: the dev cluster's TDX node advertising its key slots, the
 * confidential gate turned on, and the KataConfig page showing the gates, the TEE, kata-cc and the slots
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

  test('the gates, the TEE and the key slots on the KataConfig page', async () => {
    await client.create(ConfigMaps, {
      metadata: { name: FEATURE_GATES_CONFIGMAP, namespace: OPERATOR_NAMESPACE },
      data: { confidential: 'true' },
    });
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
