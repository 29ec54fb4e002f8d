/**
 * The web console in a real browser: the Workloads page, the accessibility tree, keyboard-only use and
 * frame times at 1,000 nodes, on a stand-in API whose objects each test sets.
 * Screenshots go to test-artifacts/console-access/.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SKIP_BROWSER } from '../support/browser.ts';
import {
  DEPLOYMENTS,
  focusedMatches,
  focusedText,
  inProgress,
  installed,
  KATACONFIGS,
  kataConfig,
  LONG,
  NODES,
  node,
  PODS,
  RUNTIMECLASSES,
  useConsoleHarness,
  workers,
} from '../support/console-harness.ts';
import { waitFor } from '../support/wait.ts';

describe('web console: workloads, accessibility and scale in a real browser', { skip: SKIP_BROWSER && 'OSC_SKIP_BROWSER_TESTS=1' }, () => {
  const h = useConsoleHarness('console-access');

  test('Workloads: create the sample kata Pod from YAML, see it Running on a kata node, delete it; a Deployment too', async () => {
    h.kube.set(NODES, ...workers(2).map(node));
    h.kube.set(KATACONFIGS, installed(workers(2)));
    h.kube.set(RUNTIMECLASSES, { apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name: 'kata' }, handler: 'kata' });
    await h.open('#/workloads');
    await h.page.getByRole('button', { name: 'Pod with kata' }).click();
    assert.match(await h.page.inputValue('#w-yaml'), /runtimeClassName: kata/);
    await h.page.getByRole('button', { name: 'Create', exact: true }).click();
    await h.page.getByRole('status').filter({ hasText: 'Pod default/hello-openshift created' }).waitFor({ timeout: LONG });
    const post = h.kube.writes.find((w) => w.method === 'POST');
    assert.equal(post?.path, '/api/v1/namespaces/default/pods');
    assert.equal((post?.body as { spec?: { runtimeClassName?: string } } | undefined)?.spec?.runtimeClassName, 'kata');
    const row = h.page.locator('[data-runtime-class=kata] [data-pod="default/hello-openshift"]');
    await row.waitFor({ timeout: LONG });
    // The scheduler and kubelet of a real cluster: bound to a kata node, Running.
    const created = h.kube.get(PODS, 'hello-openshift', 'default');
    h.kube.set(PODS, {
      ...created,
      metadata: { ...created?.metadata, name: 'hello-openshift' },
      spec: { ...created?.spec, nodeName: 'worker-1' },
      status: { phase: 'Running' },
    });
    await h.page
      .locator(
        '[data-runtime-class=kata] [data-pod="default/hello-openshift"][data-phase=Running][data-node=worker-1] [data-test=kata-node]',
      )
      .waitFor({ timeout: LONG });
    await h.shot('workloads');
    await row.getByRole('button', { name: 'Delete Pod default/hello-openshift' }).click();
    const dialog = h.page.getByRole('dialog', { name: 'Delete Pod default/hello-openshift?' });
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await row.waitFor({ state: 'detached', timeout: LONG });
    assert.ok(h.kube.writes.some((w) => w.method === 'DELETE' && w.path === '/api/v1/namespaces/default/pods/hello-openshift'));

    await h.page.getByRole('button', { name: 'Deployment with kata' }).click();
    await h.page.getByRole('button', { name: 'Create', exact: true }).click();
    await h.page.locator('[data-test=kata-deployments] [data-deployment="default/hello-openshift"]').waitFor({ timeout: LONG });
    assert.ok(h.kube.writes.some((w) => w.method === 'POST' && w.path === '/apis/apps/v1/namespaces/default/deployments'));

    // Delete the Deployment: confirmed in its own dialog, sent as the console's user, gone from the list.
    const deployment = h.page.locator('[data-test=kata-deployments] [data-deployment="default/hello-openshift"]');
    await deployment.getByRole('button', { name: 'Delete Deployment default/hello-openshift' }).click();
    const confirm = h.page.getByRole('dialog', { name: 'Delete Deployment default/hello-openshift?' });
    assert.match(await confirm.ariaSnapshot(), /The Deployment and its pods are deleted\./);
    assert.equal(await h.page.evaluate(focusedText), 'Cancel', 'the dialog opens on Cancel');
    await confirm.getByRole('button', { name: 'Delete' }).click();
    await deployment.waitFor({ state: 'detached', timeout: LONG });
    const deletes = h.kube.writes.filter((w) => w.method === 'DELETE');
    assert.equal(deletes.at(-1)?.path, '/apis/apps/v1/namespaces/default/deployments/hello-openshift');
    assert.equal(deletes.length, 2, 'one DELETE for the Pod, one for the Deployment');
    assert.equal(h.kube.get(DEPLOYMENTS, 'hello-openshift', 'default'), undefined);
    await h.page.locator('text=None.').waitFor({ timeout: LONG });
  });

  test('the accessibility tree: page navigation, KataConfig tabs, the live summary, the node group and the dialog are named', async () => {
    h.kube.set(NODES, ...workers(3).map(node));
    h.kube.set(KATACONFIGS, installed(workers(3)));
    await h.open('#/kataconfigs/example-kataconfig');
    await h.page.locator('[data-test=summary][data-phase=Installed]').waitFor({ timeout: LONG });
    const nav = await h.page.getByRole('navigation', { name: 'Console pages' }).ariaSnapshot();
    assert.match(nav, /link "KataConfig"/);
    assert.match(nav, /link "Workloads"/);
    const tabs = await h.page.getByRole('tablist', { name: 'KataConfig example-kataconfig' }).ariaSnapshot();
    assert.match(tabs, /tab "Details" \[selected\]/);
    assert.match(tabs, /tab "YAML"/);
    await h.page.getByRole('tabpanel', { name: 'Details' }).waitFor();
    assert.match(await h.page.getByRole('status').first().ariaSnapshot(), /Installed/);
    assert.match(await h.page.getByRole('progressbar', { name: '3 of 3 nodes ready' }).ariaSnapshot(), /progressbar/);
    const group = h.page.getByRole('group', { name: /^3 nodes/ });
    assert.equal(await group.getByRole('button').count(), 3);
    await h.page.getByRole('button', { name: 'Delete KataConfig' }).click();
    const dialog = h.page.getByRole('dialog', { name: 'Delete KataConfig example-kataconfig?' });
    await dialog.waitFor();
    // The dialog first looks for pods that use kata, then says what the delete will do.
    await dialog.getByText(/Kata leaves every node/).waitFor();
    assert.match(await dialog.ariaSnapshot(), /Kata leaves every node/);
    console.log(`# accessibility tree of the KataConfig page:\n${await h.page.locator('body').ariaSnapshot()}`);
  });

  test('keyboard only: create a KataConfig, watch it, delete it', async () => {
    h.kube.set(NODES, ...workers(3).map(node));
    await h.open('#/kataconfigs');
    await h.page.locator('text=No KataConfigs found').waitFor({ timeout: LONG });
    const focusOn = async (css: string) => {
      for (let i = 0; i < 60; i++) {
        if (await h.page.evaluate(focusedMatches, css)) return;
        await h.page.keyboard.press('Tab');
      }
      throw new Error(`Tab never reached ${css}`);
    };
    await focusOn('[data-test=create-kataconfig]');
    await h.page.keyboard.press('Enter');
    await h.page.locator('#f-name').waitFor({ timeout: LONG });
    await focusOn('#f-name');
    await h.page.keyboard.press('ControlOrMeta+a');
    await h.page.keyboard.type('keyboard-kataconfig');
    await focusOn('#f-logLevel');
    await h.page.keyboard.press('ArrowDown'); // info → debug
    await focusOn('button[type=submit]');
    await h.page.keyboard.press('Enter');
    await h.page.waitForURL(/#\/kataconfigs\/keyboard-kataconfig$/, { timeout: LONG });
    const post = h.kube.writes.find((w) => w.method === 'POST');
    assert.equal((post?.body as { spec?: { logLevel?: string } } | undefined)?.spec?.logLevel, 'debug');

    // Watch: the operator's progress arrives; the tiles are reachable with Tab and the arrow keys.
    const current = h.kube.get(KATACONFIGS, 'keyboard-kataconfig');
    h.kube.set(KATACONFIGS, {
      ...current,
      metadata: { ...current?.metadata, name: 'keyboard-kataconfig' },
      status: {
        conditions: [inProgress('True', 'Installing', 'Performing initial installation of kata on cluster')],
        kataNodes: { nodeCount: 3, readyNodeCount: 1, installed: ['worker-0'], installing: ['worker-1'], waitingToInstall: ['worker-2'] },
      },
    });
    await h.page.locator('[data-test=count]').filter({ hasText: '1 of 3 nodes ready' }).waitFor({ timeout: LONG });
    await focusOn('[data-node=worker-0]');
    await h.page.keyboard.press('ArrowRight');
    await h.page.keyboard.press('Enter');
    await h.page.locator('[data-test=node-details]').filter({ hasText: 'worker-1' }).waitFor({ timeout: LONG });

    await focusOn('[data-test=delete]');
    await h.page.keyboard.press('Enter');
    await h.page.getByRole('dialog').waitFor({ timeout: LONG });
    assert.equal(await h.page.evaluate(focusedText), 'Cancel', 'the dialog opens on Cancel');
    // A browser opens at most six connections to the console and each watch holds one: with the dialog open,
    // one must stay free for the delete itself (it once queued behind the watches forever).
    assert.ok(h.kube.openWatches() <= 5, `${h.kube.openWatches()} watches open on the KataConfig page`);
    await h.page.keyboard.press('Shift+Tab');
    await h.page.keyboard.press('Enter');
    await waitFor(() => h.kube.writes.some((w) => w.method === 'DELETE' && w.path === `${KATACONFIGS}/keyboard-kataconfig`), {
      timeoutMs: LONG,
      message: 'the DELETE sent',
    });
    await h.page.getByRole('dialog').waitFor({ state: 'detached', timeout: LONG });
    await h.page.locator('[data-test=gone]').waitFor({ timeout: LONG });
  });

  test('a status set while the page’s watch request is still on its way is shown (the list/watch gap)', async () => {
    h.kube.set(NODES, ...workers(3).map(node));
    const status = (ready: string[]) => ({
      conditions: [inProgress('True', 'Installing', 'Performing initial installation of kata on cluster')],
      kataNodes: { nodeCount: 3, readyNodeCount: ready.length, installed: ready, waitingToInstall: workers(3).slice(ready.length) },
    });
    h.kube.set(KATACONFIGS, kataConfig({}, status([])));
    // Hold the page's first KataConfig watch between its list and the API server, as a slow network would.
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    let asked = () => {};
    const watchAsked = new Promise<void>((r) => (asked = r));
    let first = true;
    await h.page.route(
      (url) => url.pathname === `/k8s${KATACONFIGS}` && url.searchParams.get('watch') === '1',
      async (route) => {
        if (first) {
          first = false;
          asked();
          await held;
        }
        await route.continue();
      },
    );
    await h.open('#/kataconfigs/example-kataconfig');
    await watchAsked;
    await h.page.locator('[data-test=count]').filter({ hasText: '0 of 3 nodes ready' }).waitFor({ timeout: LONG });
    // The operator's progress lands after the page's list and before its watch reaches the server.
    h.kube.set(KATACONFIGS, kataConfig({}, status(['worker-0'])));
    assert.equal(h.kube.watching(KATACONFIGS), 0, 'the watch is still held');
    release();
    await h.page.locator('[data-test=count]').filter({ hasText: '1 of 3 nodes ready' }).waitFor({ timeout: LONG });
  });

  test('1,000 nodes: frame times while the status changes ten times a second', async () => {
    const all = workers(1000);
    h.kube.set(NODES, ...all.map(node));
    const status = (done: number) => ({
      conditions: [inProgress('True', 'Installing', 'Performing initial installation of kata on cluster')],
      kataNodes: {
        nodeCount: 1000,
        readyNodeCount: done,
        installed: all.slice(0, done),
        installing: all.slice(done, done + 50),
        waitingToInstall: all.slice(done + 50),
      },
    });
    h.kube.set(KATACONFIGS, kataConfig({}, status(0)));
    await h.open('#/kataconfigs/example-kataconfig');
    await h.page.locator('[data-test=tiles] .tile').nth(999).waitFor({ timeout: LONG });
    await h.page.evaluate(() => {
      const w = globalThis as unknown as { frames: number[]; stop: boolean; requestAnimationFrame(f: (t: number) => void): void };
      w.frames = [];
      w.stop = false;
      let last = 0;
      const tick = (t: number) => {
        if (last) w.frames.push(t - last);
        last = t;
        if (!w.stop) w.requestAnimationFrame(tick);
      };
      w.requestAnimationFrame(tick);
    });
    // The main thread's own work for each update, in CPU time (Chrome's thread ticks): what the page costs,
    // whatever else the machine runs, where the frame times above also carry the machine's load.
    const cdp = await h.page.context().newCDPSession(h.page);
    await cdp.send('Performance.enable', { timeDomain: 'threadTicks' });
    const busy = async () => {
      const m = new Map((await cdp.send('Performance.getMetrics')).metrics.map((x) => [x.name, x.value]));
      return ((m.get('TaskDuration') ?? 0) - (m.get('DevToolsCommandDuration') ?? 0)) * 1000;
    };
    const perUpdate: number[] = [];
    // Five seconds of a rollout at ten status updates a second, each moving 20 nodes; each update is measured
    // from before it is sent until the page shows it.
    for (let step = 1; step <= 50; step++) {
      const sent = Date.now();
      const before = await busy();
      h.kube.set(KATACONFIGS, kataConfig({}, status(step * 20)));
      await h.page
        .locator('[data-test=count]')
        .filter({ hasText: `${step * 20} of 1000 nodes ready` })
        .waitFor({ timeout: LONG });
      perUpdate.push((await busy()) - before);
      await new Promise((r) => setTimeout(r, Math.max(0, 100 - (Date.now() - sent))));
    }
    await h.page.locator('[data-test=count]').filter({ hasText: '1000 of 1000 nodes ready' }).waitFor({ timeout: LONG });
    const frames = (await h.page.evaluate(() => {
      const w = globalThis as unknown as { frames: number[]; stop: boolean };
      w.stop = true;
      return w.frames;
    })) as number[];
    const sorted = [...frames].sort((a, b) => a - b);
    const pct = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
    console.log(
      `# 1,000 nodes, 50 status updates: ${frames.length} frames; frame time p50 ${pct(50).toFixed(1)} ms, p95 ${pct(95).toFixed(1)} ms, p99 ${pct(99).toFixed(1)} ms, max ${pct(100).toFixed(1)} ms`,
    );
    await h.shot('1000-nodes');
    const cpu = [...perUpdate].sort((a, b) => a - b);
    const cpuPct = (p: number) => cpu[Math.min(cpu.length - 1, Math.floor((p / 100) * cpu.length))] ?? 0;
    console.log(
      `# main-thread CPU per update: p50 ${cpuPct(50).toFixed(1)} ms, p95 ${cpuPct(95).toFixed(1)} ms, max ${cpuPct(100).toFixed(1)} ms`,
    );
    assert.ok(frames.length > 50, 'the page kept drawing');
    // Generous bounds: on a loaded machine the tail says more about the machine than about the h.page.
    assert.ok(pct(50) < 100, `median frame time ${pct(50)} ms: the page janks at 1,000 nodes`);
    assert.ok(pct(100) < 2000, `a frame of ${pct(100)} ms: the page froze at 1,000 nodes`);
    // The jank bound: an update that keeps the main thread busy for three frames (50 ms of CPU) drops frames
    // on any machine. Measured p95 18-20 ms (max 29 ms) with the machine's load between 10 and 20 on 2 cores,
    // where the frame times above had a p95 of 50 to 500 ms: the load's, not the page's.
    assert.ok(cpuPct(95) < 50, `p95 of the main thread's CPU per status update ${cpuPct(95).toFixed(1)} ms: the page janks at 1,000 nodes`);
  });
});
