/**
 * The console's peer pods page on `osc start --cloud AWS`: the KataConfig created through the form with
 * enablePeerPods ticked, then what osc reports (the configuration valid, the pod VM image job, the per-node
 * limit), with the credentials Secret never shown; and the metrics page's presets for the installation, the
 * kata pods, the leaked pod VM counters and the adaptor restarts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import type { Browser, Page } from 'playwright-core';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { Infrastructures } from '../../src/api/openshift.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { ConfigMaps, Secrets } from '../../src/kube/resources.ts';
import { artifactsDir, launchBrowser, type OscStart, SKIP_BROWSER, startOsc } from '../support/browser.ts';
import { waitFor } from '../support/wait.ts';

const LONG = 180_000;
/** peer-pods-secret's secret access key: the dev cluster's AWS account accepts only keys it has. */
let SECRET_VALUE = '';

describe('web console: peer pods', { skip: SKIP_BROWSER && 'OSC_SKIP_BROWSER_TESTS=1' }, () => {
  const home = mkdtempSync(join(tmpdir(), 'osc-console-pp-'));
  const shots = artifactsDir('console-peerpods');
  let osc: OscStart;
  let client: KubeClient;
  let browser: Browser;
  let page: Page;

  before(async () => {
    browser = await launchBrowser();
    osc = await startOsc(['--cloud', 'AWS', '--workers', '1', '--reboot-ms', '300', '--quiet'], home);
    const kc = new KubeConfig();
    kc.loadFromFile(osc.kubeconfig);
    client = new KubeClient(kc);
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  });

  after(async () => {
    await browser?.close();
    await client?.close();
    await osc?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  test('enablePeerPods from the form; the page shows the configuration, the image job and the limit, not the Secret', async () => {
    const region = (await client.get(Infrastructures, 'cluster')).status?.platformStatus?.aws?.region ?? '';
    // The administrator's own key (here the account's administrator, whose key the cluster's root credentials hold).
    const root = await client.get(Secrets, 'aws-creds', 'kube-system');
    const decode = (k: string) => Buffer.from(root.data?.[k] ?? '', 'base64').toString('utf8');
    SECRET_VALUE = decode('aws_secret_access_key');
    assert.ok(SECRET_VALUE.length >= 20);
    await client.create(Secrets, {
      metadata: { name: 'peer-pods-secret', namespace: OPERATOR_NAMESPACE },
      stringData: { AWS_ACCESS_KEY_ID: decode('aws_access_key_id'), AWS_SECRET_ACCESS_KEY: SECRET_VALUE },
    } as never);
    await client.create(ConfigMaps, {
      metadata: { name: 'peer-pods-cm', namespace: OPERATOR_NAMESPACE },
      data: {
        CLOUD_PROVIDER: 'aws',
        VXLAN_PORT: '9000',
        PODVM_INSTANCE_TYPE: 't3.medium',
        PODVM_INSTANCE_TYPES: 't3.small,t3.medium,t3.large',
        PODVM_AMI_ID: '',
        AWS_REGION: region,
        AWS_SUBNET_ID: 'subnet-0a1b2c3d4e5f67890',
        AWS_VPC_ID: 'vpc-0a1b2c3d4e5f67890',
        AWS_SG_IDS: 'sg-0a1b2c3d4e5f67890',
      },
    } as never);

    try {
      await followInBrowser();
    } catch (e) {
      await page.screenshot({ path: join(shots, 'failure.png'), fullPage: true });
      throw e;
    }
  });

  test('metrics: the presets plot the installation, the kata pods, the leaked pod VM counters and the adaptor restarts', async () => {
    await page.click('[data-nav=metrics]');
    const chart = page.locator('[data-test=chart]');
    const rows: [preset: string, query: RegExp, series: number, legend: RegExp][] = [
      ['setup-info', /^osc_setup_info$/, 1, /osc_setup_info\{cloud_provider="aws", setup_type="peerpods"\}/],
      ['kata-pods', /^osc_kata_pods$/, 2, /osc_kata_pods\{runtimeclass="kata-remote"\}/],
      ['leaked-vms', /osc_peerpods_leaked_vms_found_total/, 3, /osc_peerpods_leaked_vms_deleted_total\{cloud="aws"\}/],
      ['adaptor-restarts', /^osc_peerpods_adaptor_restarts_total$/, 1, /osc_peerpods_adaptor_restarts_total/],
    ];
    try {
      for (const [preset, query, series, legend] of rows) {
        await page.click(`[data-preset=${preset}]`);
        assert.match(await page.locator('#metrics-query').inputValue(), query, preset);
        // Prometheus scrapes every 2 s and the page asks every 5 s: wait for the series to be there.
        await waitFor(
          async () =>
            Number(await chart.getAttribute('data-series').catch(() => '0')) >= series && legend.test((await chart.textContent()) ?? ''),
          { timeoutMs: LONG, intervalMs: 1000, message: `the ${preset} preset plotted` },
        );
        await page.screenshot({ path: join(shots, `metrics-${preset}.png`), fullPage: true });
      }
    } catch (e) {
      await page.screenshot({ path: join(shots, 'metrics-failure.png'), fullPage: true });
      throw e;
    }
  });

  async function followInBrowser() {
    await page.goto(osc.consoleUrl);
    await page.click('[data-test=create-kataconfig]');
    await page.check('#f-enablePeerPods');
    await page.click('button[type=submit]');
    await page.waitForURL(/#\/kataconfigs\/example-kataconfig$/, { timeout: LONG });
    await page.click('[data-nav=peerpods]');
    const conditions = page.locator('[data-test=peerpods-conditions]');
    await conditions.locator('tr:has(td:text-is("PeerPodsConfigValid")) td:text-is("True")').waitFor({ timeout: LONG });
    // The job's image lands in PODVM_AMI_ID; from then on osc reports the image as provided.
    await page.locator('[data-test=image-job-state]:is([data-state=completed], [data-state="image provided"])').waitFor({ timeout: LONG });
    await page
      .locator('[data-test=image-id]')
      .filter({ hasText: /^ami-[0-9a-f]{17}$/ })
      .waitFor({ timeout: LONG });
    await page.locator('[data-test=limit]').filter({ hasText: /^\d+$/ }).waitFor({ timeout: LONG });
    await page.screenshot({ path: join(shots, 'peerpods.png'), fullPage: true });
    const text = (await page.locator('main').textContent()) ?? '';
    assert.ok(!text.includes(SECRET_VALUE), 'the Secret value is never shown');
    assert.match(text, /peer-pods-secret is never shown/);
    assert.match(text, /AWS_SUBNET_ID/);
  }
});
