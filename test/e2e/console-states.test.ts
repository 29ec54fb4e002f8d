/**
 * The web console in a real browser, on states that a live rollout reaches slowly or never: the server
 * gone and back, an uninstall of 12 workers half done, a dead end, the form's checks and the delete dialog
 * with kata pods. The real console server runs against a stand-in API whose objects each test sets.
 * Screenshots go to test-artifacts/console-states/.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SKIP_BROWSER } from '../support/browser.ts';
import {
  focusedMatches,
  inProgress,
  KATACONFIGS,
  kataConfig,
  LONG,
  NODES,
  node,
  PODS,
  useConsoleHarness,
  workers,
} from '../support/console-harness.ts';

describe('web console: states in a real browser', { skip: SKIP_BROWSER && 'OSC_SKIP_BROWSER_TESTS=1' }, () => {
  const h = useConsoleHarness('console-states');

  test('the console server gone: a disconnected alert, the data greyed and Create disabled; back: re-listed and live', async () => {
    await h.open('#/kataconfigs');
    await h.page.locator('text=No KataConfigs found').waitFor({ timeout: LONG });
    await h.consoleServer.close();
    const alert = h.page.getByRole('alert').filter({ hasText: 'Disconnected' });
    await alert.waitFor({ timeout: 15_000 });
    assert.match((await alert.textContent()) ?? '', /console server does not answer/);
    assert.equal(await h.page.locator('[data-test=create-kataconfig]').getAttribute('aria-disabled'), 'true');
    assert.equal(
      await h.page.locator('main').evaluate((m) => (m as unknown as { inert: boolean }).inert),
      true,
      'nothing on the page can be used',
    );
    await h.shot('disconnected');

    // While it was gone a KataConfig was created: back, the page shows it without a reload.
    h.kube.set(KATACONFIGS, kataConfig({}, {}));
    await h.serve();
    await alert.waitFor({ state: 'detached', timeout: LONG });
    await h.page.locator('[data-test=kataconfig-list] >> text=example-kataconfig').waitFor({ timeout: LONG });
    assert.equal(await h.page.locator('[data-test=create-kataconfig]').getAttribute('aria-disabled'), 'false');
    assert.equal(await h.page.locator('main').evaluate((m) => (m as unknown as { inert: boolean }).inert), false);
  });

  test('the API server gone behind a running console: disconnected too, with the reason', async () => {
    await h.open('#/kataconfigs');
    await h.page.locator('text=No KataConfigs found').waitFor({ timeout: LONG });
    const kubePort = h.kube.port;
    await h.kube.stop();
    const alert = h.page.getByRole('alert').filter({ hasText: 'Disconnected' });
    await alert.waitFor({ timeout: 15_000 });
    assert.match((await alert.textContent()) ?? '', /did not answer/);
    await h.kube.start(kubePort);
    await alert.waitFor({ state: 'detached', timeout: LONG });
  });

  test('an uninstall of 12 workers: "N of 12 nodes uninstalled", finished nodes keep a tile, waiting to uninstall has its own colour', async () => {
    const all = workers(12);
    h.kube.set(NODES, ...all.map(node));
    h.kube.set(
      KATACONFIGS,
      kataConfig(
        {},
        {
          conditions: [inProgress('False', '', '')],
          kataNodes: { nodeCount: 12, readyNodeCount: 12, installed: all },
          runtimeClasses: ['kata'],
        },
      ),
    );
    await h.open('#/kataconfigs/example-kataconfig');
    await h.page.locator('[data-test=summary][data-phase=Installed]').waitFor({ timeout: LONG });
    // Deleted: every node waits to uninstall, then they go one by one and leave the status.
    const uninstalling = (left: string[], current: string[]) =>
      kataConfig(
        {},
        {
          conditions: [inProgress('True', 'Uninstalling', 'Removing kata from cluster')],
          kataNodes: {
            nodeCount: 0,
            readyNodeCount: 0,
            uninstalling: current,
            waitingToUninstall: left.filter((n) => !current.includes(n)),
          },
          runtimeClasses: ['kata'],
        },
        true,
      );
    h.kube.set(KATACONFIGS, uninstalling(all, []));
    await h.page.locator('[data-test=count]').filter({ hasText: '0 of 12 nodes uninstalled' }).waitFor({ timeout: LONG });
    h.kube.set(KATACONFIGS, uninstalling(all.slice(3), ['worker-3']));
    const count = h.page.locator('[data-test=count]');
    await count.filter({ hasText: '3 of 12 nodes uninstalled' }).waitFor({ timeout: LONG });
    assert.equal(await h.page.locator('[data-test=summary]').getAttribute('data-phase'), 'Uninstalling');
    const states = await h.page
      .locator('[data-test=tiles] .tile')
      .evaluateAll((ts) => ts.map((t) => `${t.getAttribute('data-node')}:${t.getAttribute('data-state')}`));
    assert.deepEqual(states, [
      ...['worker-0', 'worker-1', 'worker-2'].map((n) => `${n}:uninstalled`),
      'worker-3:uninstalling',
      ...all.slice(4).map((n) => `${n}:waiting-uninstall`),
    ]);
    const colour = (state: string) =>
      h.page
        .locator(`[data-test=tiles] .tile[data-state=${state}]`)
        .first()
        .evaluate((t) => {
          type Styles = { getComputedStyle(e: unknown): { backgroundImage: string; backgroundColor: string } };
          const cs = (globalThis as unknown as Styles).getComputedStyle(t);
          return `${cs.backgroundImage} ${cs.backgroundColor}`;
        });
    assert.notEqual(await colour('waiting-uninstall'), await colour('uninstalled'));
    const legend = await h.page
      .locator('[data-test=tile-legend] [data-state]')
      .evaluateAll((ls) => ls.map((l) => l.getAttribute('data-state')));
    assert.ok(legend.includes('waiting-uninstall') && !legend.includes('waiting'), legend.join(', '));
    const progress = h.page.getByRole('progressbar', { name: '3 of 12 nodes uninstalled' });
    assert.equal(await progress.getAttribute('value'), '3');
    await h.shot('uninstalling-12');
  });

  test('checkNodeEligibility with no eligible node is a warning with what to do, not a calm "Installing"', async () => {
    h.kube.set(NODES, ...workers(3).map(node));
    h.kube.set(
      KATACONFIGS,
      kataConfig(
        { checkNodeEligibility: true },
        {
          conditions: [inProgress('True', 'Installing', 'no Nodes with required labels found. Is NFD running?')],
          kataNodes: { nodeCount: 0, readyNodeCount: 0 },
        },
      ),
    );
    await h.open('#/kataconfigs/example-kataconfig');
    const deadEnd = h.page.locator('[data-test=dead-end]');
    await deadEnd.waitFor({ timeout: LONG });
    const text = (await deadEnd.textContent()) ?? '';
    assert.match(text, /Is NFD running\?/);
    assert.match(text, /feature\.node\.kubernetes\.io\/runtime\.kata=true/);
    assert.match(text, /set checkNodeEligibility to false/);
    assert.notEqual(await h.page.locator('[data-test=summary]').getAttribute('data-phase'), 'Installing');
    assert.match((await h.page.locator('[data-test=summary] .phase').getAttribute('class')) ?? '', /tone-warning/);
    assert.equal(await h.page.locator('text=No nodes listed yet').count(), 0, 'no promise that nodes are coming');
    await h.shot('dead-end-nfd');
    // The list says it too.
    await h.page.click('[data-nav=kataconfigs]');
    await h.page.locator('[data-test=kataconfig-list] [data-test=action-needed]').waitFor({ timeout: LONG });
  });

  test('a selector that matches no node is a warning too, and the selector reads as an expression', async () => {
    h.kube.set(NODES, ...workers(3).map(node));
    h.kube.set(
      KATACONFIGS,
      kataConfig(
        { kataConfigPoolSelector: { matchExpressions: [{ key: 'custom-kata', operator: 'In', values: ['true'] }] } },
        {
          conditions: [
            inProgress(
              'True',
              'Installing',
              'no worker Nodes match kataConfigPoolSelector: label the nodes that should run kata, or change the selector',
            ),
          ],
          kataNodes: { nodeCount: 0, readyNodeCount: 0 },
        },
      ),
    );
    await h.open('#/kataconfigs/example-kataconfig');
    const deadEnd = h.page.locator('[data-test=dead-end]');
    await deadEnd.waitFor({ timeout: LONG });
    assert.match((await deadEnd.textContent()) ?? '', /change the selector/);
    assert.equal(await h.page.locator('[data-test=pool-selector-text]').textContent(), 'custom-kata in (true)');
  });

  test('the form flags Bad_Name, a bad selector key and In without values at once, in the API server words, and sends nothing', async () => {
    await h.open('#/kataconfigs/~new');
    await h.page.fill('#f-name', 'Bad_Name');
    const levels = await h.page.locator('#f-logLevel option').evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value));
    assert.deepEqual(levels, ['fatal', 'panic', 'error', 'warn', 'info', 'debug', 'trace'], 'logLevel is a choice of the allowed values');
    await h.page.click('summary:text-is("kataConfigPoolSelector")');
    await h.page.click('summary:text-is("matchExpressions")');
    await h.page.click('button:text-is("Add matchExpressions")');
    await h.page.fill('[id="f-matchExpressions.0.key"]', 'bad key!');
    const writes = h.kube.writes.length;
    await h.page.click('button[type=submit]');
    await h.page.getByRole('alert').filter({ hasText: 'fields need a fix' }).waitFor({ timeout: LONG });
    const at = async (field: string) => (await h.page.locator(`[data-field-error="${field}"]`).textContent()) ?? '';
    assert.match(await at('name'), /metadata\.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain/);
    assert.match(await at('matchExpressions.0.key'), /matchExpressions\[0\]\.key: Invalid value: "object": key must be a valid label key/);
    assert.match(await at('matchExpressions.0'), /values must be a non-empty list when operator is In or NotIn/);
    assert.equal(h.kube.writes.length, writes, 'nothing was sent');
    assert.equal(await h.page.evaluate(focusedMatches, '#f-name'), true, 'the first field to fix has the focus');
    assert.equal(await h.page.getAttribute('#f-name', 'aria-invalid'), 'true');
    await h.shot('form-all-at-once');

    // Fixed, the errors go as one types; what only the API server knows still lands at its field.
    await h.page.fill('#f-name', 'example-kataconfig');
    await h.page.fill('[id="f-matchExpressions.0.key"]', 'custom-kata');
    await h.page.click('[data-expr="0"] summary:text-is("values")');
    await h.page.click('button:text-is("Add value")');
    await h.page.fill('[id="f-matchExpressions.0.values.0"]', 'true');
    assert.equal(await h.page.locator('[data-test=selector-text]').textContent(), 'Selects worker nodes where: custom-kata in (true)');
    assert.equal(await h.page.locator('[data-field-error]').count(), 0);
    h.kube.answers.set(`POST ${KATACONFIGS}`, {
      code: 422,
      body: {
        kind: 'Status',
        code: 422,
        message: 'KataConfig "example-kataconfig" is invalid',
        details: { causes: [{ field: 'spec.logLevel', message: 'Unsupported value: "info": the cluster says no' }] },
      },
    });
    await h.page.click('button[type=submit]');
    await h.page.locator('[data-field-error=logLevel]').filter({ hasText: 'the cluster says no' }).waitFor({ timeout: LONG });
    h.kube.answers.clear();
  });

  test('the delete dialog says the delete will be blocked and lists the kata pods before the administrator confirms', async () => {
    h.kube.set(NODES, ...workers(2).map(node));
    h.kube.set(
      KATACONFIGS,
      kataConfig(
        {},
        {
          conditions: [inProgress('False', '', '')],
          kataNodes: { nodeCount: 2, readyNodeCount: 2, installed: workers(2) },
          runtimeClasses: ['kata'],
        },
      ),
    );
    const pod = (name: string, runtimeClassName?: string) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default' },
      spec: { ...(runtimeClassName ? { runtimeClassName } : {}), nodeName: 'worker-0', containers: [{ name: 'c', image: 'x' }] },
      status: { phase: 'Running' },
    });
    h.kube.set(PODS, pod('hello-openshift', 'kata'), pod('plain'));
    await h.open('#/kataconfigs/example-kataconfig');
    await h.page.click('[data-test=delete]');
    const dialog = h.page.getByRole('dialog', { name: 'Delete KataConfig example-kataconfig?' });
    await dialog.waitFor({ timeout: LONG });
    const warning = dialog.locator('[data-test=delete-will-block]');
    await warning.waitFor({ timeout: LONG });
    assert.match((await warning.textContent()) ?? '', /The delete will be blocked: 1 pod uses kata/);
    assert.deepEqual(await warning.locator('[data-pod]').evaluateAll((ps) => ps.map((p) => p.getAttribute('data-pod'))), [
      'default/hello-openshift',
    ]);
    assert.equal(h.kube.writes.filter((w) => w.method === 'DELETE').length, 0, 'nothing deleted before the confirmation');
    await h.shot('delete-will-block');
    await h.page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached', timeout: LONG });
    assert.equal(h.kube.writes.filter((w) => w.method === 'DELETE').length, 0, 'Escape cancels');
  });

  test("one KataConfig's remembered uninstall is not another's", async () => {
    const deleting = (name: string, waiting: string[]) => {
      const kc = kataConfig(
        {},
        {
          conditions: [inProgress('True', 'Uninstalling', 'Removing kata from cluster')],
          kataNodes: { nodeCount: 0, readyNodeCount: 0, waitingToUninstall: waiting },
        },
        true,
      );
      return { ...kc, metadata: { ...kc.metadata, name } };
    };
    h.kube.set(KATACONFIGS, deleting('first', workers(3)), deleting('second', ['worker-9']));
    await h.open('#/kataconfigs/first');
    await h.page.locator('[data-test=count]').filter({ hasText: '0 of 3 nodes uninstalled' }).waitFor({ timeout: LONG });
    await h.page.evaluate(() => {
      (globalThis as unknown as { location: { hash: string } }).location.hash = '#/kataconfigs/second';
    });
    await h.page.locator('[data-test=count]').filter({ hasText: '0 of 1 nodes uninstalled' }).waitFor({ timeout: LONG });
    assert.equal(await h.page.locator('[data-test=tiles] .tile').count(), 1);
  });
});
