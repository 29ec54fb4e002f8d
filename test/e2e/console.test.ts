/**
 * The web console in a real browser, on `osc start` (what `npm start` runs): the documented web console
 * procedure end to end (Create KataConfig through the form with a matchExpression, the rollout followed
 * live to installed, the YAML tab's InProgress False, a kata workload deployed from the Workloads page and
 * running on a kata node, a delete that the dialog says will be blocked and why, the pod deleted from the
 * console, the uninstall to the end), a mistake shown at its field, the metrics page plotting a kata
 * metric, and the token guard.
 * Screenshots of each step go to test-artifacts/console/.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import type { Browser, Page } from 'playwright-core';
import { parse } from 'yaml';
import { KubeClient } from '../../src/kube/client.ts';
import { Nodes } from '../../src/kube/resources.ts';
import { artifactsDir, launchBrowser, type OscStart, SKIP_BROWSER, startOsc } from '../support/browser.ts';
import { waitFor } from '../support/wait.ts';

const WORKERS = 10;
/** Workers the matchExpression selects (custom-kata=true); the others keep no kata. */
const SELECTED = Array.from({ length: WORKERS - 2 }, (_, i) => `worker-${i}`);
const LONG = 180_000;

/** The processes below pid (from /proc), with their command names. */
function descendants(pid: number): { pid: number; comm: string }[] {
  const parent = new Map<number, { ppid: number; comm: string }>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      parent.set(Number(e), { ppid: Number(stat.slice(close + 2).split(' ')[1]), comm: stat.slice(stat.indexOf('(') + 1, close) });
    } catch {
      // gone meanwhile
    }
  }
  const below = (p: number): boolean => {
    for (let q = parent.get(p)?.ppid; q; q = parent.get(q)?.ppid) if (q === pid) return true;
    return false;
  };
  return [...parent].filter(([p]) => below(p)).map(([p, v]) => ({ pid: p, comm: v.comm }));
}

describe('web console: the documented procedure in a real browser', { skip: SKIP_BROWSER && 'OSC_SKIP_BROWSER_TESTS=1' }, () => {
  const home = mkdtempSync(join(tmpdir(), 'osc-console-home-'));
  const shots = artifactsDir('console');
  let oscStart: OscStart;
  let osc: ChildProcess;
  let consoleUrl = '';
  let client: KubeClient;
  let browser: Browser;
  let page: Page;
  let step = 0;
  const shot = async (name: string) => {
    step++;
    await page.screenshot({ path: join(shots, `${String(step).padStart(2, '0')}-${name}.png`), fullPage: true });
  };

  before(async () => {
    // Launch the browser first: a machine without one fails here, with what to install.
    browser = await launchBrowser();
    oscStart = await startOsc(['--workers', String(WORKERS), '--reboot-ms', '700'], home);
    osc = oscStart.proc;
    consoleUrl = oscStart.consoleUrl;
    const kc = new KubeConfig();
    kc.loadFromFile(oscStart.kubeconfig);
    client = new KubeClient(kc);
    // As the documentation says: label the nodes that should get kata, then select them.
    for (const n of SELECTED) await client.patch(Nodes, n, { metadata: { labels: { 'custom-kata': 'true' } } }, { type: 'merge' });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  });

  after(async () => {
    await browser?.close();
    await client?.close();
    await oscStart?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  test('a request without the console token is refused; with it, Secrets and cross-site writes still are', async () => {
    const origin = new URL(consoleUrl).origin;
    const token = new URL(consoleUrl).searchParams.get('token') ?? '';
    assert.equal((await fetch(`${origin}/k8s/api/v1/nodes`)).status, 401);
    assert.equal((await fetch(`${origin}/`)).status, 401);
    assert.equal((await fetch(`${origin}/?token=wrong`)).status, 401);
    assert.equal(
      (await fetch(`${origin}/k8s/api/v1/nodes`, { headers: { cookie: `osc-console-${new URL(origin).port}=wrong` } })).status,
      401,
    );
    const auth = { authorization: `Bearer ${token}` };
    assert.equal((await fetch(`${origin}/k8s/api/v1/nodes`, { headers: auth })).status, 200);
    const secrets = await fetch(`${origin}/k8s/api/v1/namespaces/openshift-sandboxed-containers-operator/secrets`, { headers: auth });
    assert.equal(secrets.status, 403);
    assert.match(((await secrets.json()) as { message: string }).message, /never shows Secret values/);
    const post = await fetch(`${origin}/k8s/api/v1/namespaces/default/configmaps`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: { name: 'csrf' } }),
    });
    assert.equal(post.status, 403, 'a write without the x-osc-console header');
    const crossSite = await fetch(`${origin}/k8s/api/v1/namespaces/default/configmaps`, {
      method: 'POST',
      headers: { ...auth, 'x-osc-console': '1', origin: 'http://evil.example', 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: { name: 'csrf' } }),
    });
    assert.equal(crossSite.status, 403, 'a write from another origin');
    // fetch() may not set Host; a DNS-rebinding page's requests carry its own name there.
    const rebinding = await new Promise<number>((resolve, reject) => {
      const u = new URL(origin);
      request(
        { host: u.hostname, port: u.port, path: '/k8s/api/v1/nodes', headers: { ...auth, host: `evil.example:${u.port}` } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      )
        .on('error', reject)
        .end();
    });
    assert.equal(rebinding, 403, 'a Host header naming another site');
  });

  test('opening the printed URL signs in and shows the operator', async () => {
    await page.goto(consoleUrl);
    assert.equal(new URL(page.url()).search, '', 'the token leaves the address bar');
    // Marks this page load: still there at the end means nothing was reloaded.
    await page.evaluate('window.oscMarker = 42');
    await page.click('[data-nav=operator]');
    await page.locator('[data-test=leader]').filter({ hasText: '(this process)' }).waitFor({ timeout: LONG });
    assert.match((await page.locator('[data-test=ready]').textContent()) ?? '', /^Ready$/);
    assert.match((await page.locator('[data-test=where]').textContent()) ?? '', /osc start process/);
    // The Infrastructure is read once the page opens, beside the lease watch: wait for it, not for the lease.
    await page.locator('[data-test=platform]').filter({ hasText: /\S/ }).filter({ hasNotText: '—' }).waitFor({ timeout: LONG });
    assert.equal((await page.locator('[data-test=platform]').textContent()) ?? '', 'None');
    await shot('operator');
  });

  test('a mistake is flagged at its field in the API server words before anything is sent, and the form is kept', async () => {
    await page.click('[data-nav=kataconfigs]');
    await page.click('[data-test=create-kataconfig]');
    assert.equal(await page.inputValue('#f-name'), 'example-kataconfig', 'the documented default name');
    await page.fill('#f-labels', 'team=platform');
    await page.fill('#f-name', 'Bad_Name');
    await page.click('button[type=submit]');
    const err = page.locator('[data-field-error=name]');
    await err.waitFor({ timeout: LONG });
    assert.match((await err.textContent()) ?? '', /metadata\.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain/);
    assert.equal(await page.inputValue('#f-name'), 'Bad_Name');
    assert.equal(await page.inputValue('#f-labels'), 'team=platform');
    await shot('refused-at-field');
    await page.fill('#f-name', 'example-kataconfig');
  });

  test('Create KataConfig with a matchExpression, watch the tiles go to installed, read InProgress False in the YAML tab', async () => {
    await page.selectOption('#f-logLevel', 'info');
    await page.click('summary:text-is("kataConfigPoolSelector")');
    await page.click('summary:text-is("matchExpressions")');
    await page.click('button:text-is("Add matchExpressions")');
    await page.fill('[id="f-matchExpressions.0.key"]', 'custom-kata');
    await page.selectOption('[id="f-matchExpressions.0.operator"]', 'In');
    await page.click('[data-expr="0"] summary:text-is("values")');
    await page.click('button:text-is("Add value")');
    await page.fill('[id="f-matchExpressions.0.values.0"]', 'true');
    const preview = parse((await page.locator('[data-test=yaml-preview]').textContent()) ?? '');
    assert.deepEqual(preview.spec.kataConfigPoolSelector, { matchExpressions: [{ key: 'custom-kata', operator: 'In', values: ['true'] }] });
    assert.deepEqual(preview.metadata, { name: 'example-kataconfig', labels: { team: 'platform' } });
    await shot('create-form');
    await page.click('button[type=submit]');
    await page.waitForURL(/#\/kataconfigs\/example-kataconfig$/, { timeout: LONG });

    // The rollout, live: a picture mid-way, then every selected node installed, without a reload.
    await page.locator('[data-test=tiles] .tile[data-state=installed]').first().waitFor({ timeout: LONG });
    await page.locator('[data-test=tiles] .tile[data-state=installing]').first().waitFor({ timeout: LONG });
    await page.locator(`[data-node="${SELECTED[1]}"]`).click();
    await page.locator('[data-test=node-details]').waitFor();
    await shot('rollout-in-progress');
    const tiles = page.locator('[data-test=tiles] .tile');
    await waitFor(
      async () => {
        const states = await tiles.evaluateAll((ts) => ts.map((t) => t.getAttribute('data-state')));
        return states.length === SELECTED.length && states.every((x) => x === 'installed');
      },
      { timeoutMs: LONG, message: 'every selected node installed' },
    );
    const tileNodes = await page.locator('[data-test=tiles] .tile').evaluateAll((ts) => ts.map((t) => t.getAttribute('data-node')));
    assert.deepEqual(tileNodes, SELECTED, 'only the nodes the matchExpression selects get kata');
    await page.locator('[data-test=summary][data-phase=Installed]').waitFor({ timeout: LONG });
    await page.locator('[data-test=runtimeclasses] [data-rc=kata]').waitFor({ timeout: LONG });
    await shot('installed');

    await page.click('[data-tab=yaml]');
    const yaml = page.locator('[data-test=yaml]');
    await waitFor(
      async () => {
        const kc = parse((await yaml.textContent()) ?? '');
        const c = kc.status?.conditions?.find((x: { type: string }) => x.type === 'InProgress');
        return c?.status === 'False' && !c.reason && kc.status.kataNodes.installed?.length === SELECTED.length;
      },
      { timeoutMs: LONG, message: 'the YAML tab to show InProgress False and every selected node installed' },
    );
    await shot('yaml-inprogress-false');
    assert.equal(await page.evaluate('window.oscMarker'), 42, 'the page was never reloaded');
  });

  test('Workloads (the documented procedure, deploying a workload from the web console): deploy the documented Pod with runtimeClassName kata from the console; it runs on a kata node', async () => {
    await page.click('[data-nav=workloads]');
    await page.getByRole('button', { name: 'Pod with kata' }).click();
    assert.match(await page.inputValue('#w-yaml'), /runtimeClassName: kata/);
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Pod default/hello-openshift created' }).waitFor({ timeout: LONG });
    const row = page.locator('[data-runtime-class=kata] [data-pod="default/hello-openshift"][data-phase=Running]');
    await row.waitFor({ timeout: LONG });
    const node = (await row.getAttribute('data-node')) ?? '';
    assert.ok(SELECTED.includes(node), `scheduled on ${node}, a node with kata`);
    await row.locator('[data-test=kata-node]').waitFor({ timeout: LONG });
    await shot('workload-running');
  });

  test('delete while a kata pod runs: the dialog says it will be blocked and names the pod; deleting the pod from Workloads lets the uninstall finish', async () => {
    await page.click('[data-nav=kataconfigs]');
    await page.click('[data-test=kataconfig-list] a:text-is("example-kataconfig")');
    await page.click('[data-test=delete]');
    const dialog = page.locator('[data-test=confirm-delete]');
    await dialog.locator('[data-test=delete-will-block] [data-pod="default/hello-openshift"]').waitFor({ timeout: LONG });
    assert.match((await dialog.textContent()) ?? '', /The delete will be blocked: 1 pod uses kata/);
    await shot('delete-will-block');
    await page.click('[data-test=confirm-delete] button.danger');
    const summary = page.locator('[data-test=summary]');
    await summary.filter({ hasText: 'Existing pods using "kata" RuntimeClass found' }).waitFor({ timeout: LONG });
    assert.match(
      (await summary.textContent()) ?? '',
      /Existing pods using "kata" RuntimeClass found\. Please delete the pods manually for KataConfig deletion to proceed/,
    );
    await page.locator('[data-test=blocking-pods] [data-pod="default/hello-openshift"]').waitFor({ timeout: LONG });
    await shot('delete-blocked');

    // The administrator deletes the pod from the Workloads page in a second tab, and watches the uninstall here.
    const second = await browser.newContext();
    const workloads = await second.newPage();
    await workloads.goto(consoleUrl);
    await workloads.goto(`${new URL(consoleUrl).origin}/#/workloads`);
    const row = workloads.locator('[data-runtime-class=kata] [data-pod="default/hello-openshift"]');
    await row.getByRole('button', { name: 'Delete Pod default/hello-openshift' }).click();
    await workloads.getByRole('dialog', { name: 'Delete Pod default/hello-openshift?' }).getByRole('button', { name: 'Delete' }).click();
    await row.waitFor({ state: 'detached', timeout: LONG });
    await second.close();

    await page.locator('[data-test=tiles] .tile[data-state=uninstalling]').first().waitFor({ timeout: LONG });
    await page
      .locator('[data-test=count]')
      .filter({ hasText: `of ${SELECTED.length} nodes uninstalled` })
      .waitFor({ timeout: LONG });
    await shot('uninstalling');
    await page.locator('[data-test=gone]').filter({ hasText: 'uninstall finished' }).waitFor({ timeout: LONG });
    await shot('uninstalled');
    assert.equal(await page.evaluate('window.oscMarker'), 42, 'the page was never reloaded');
  });

  test('metrics: typing kata lists the kata metrics; choosing one plots it from Prometheus', async () => {
    await page.click('[data-nav=metrics]');
    await page.fill('#metrics-query', 'kata');
    const names = page.locator('[data-test=metric-names] [data-metric]');
    await waitFor(
      async () => {
        // The list is read when the field gets the focus: refocus until Prometheus has scraped the operator.
        await page.locator('#metrics-query').blur();
        await page.locator('#metrics-query').focus();
        return (await names.count()) > 0;
      },
      { timeoutMs: LONG, intervalMs: 1000, message: 'kata metric names from Prometheus' },
    );
    const listed = await names.evaluateAll((els) => els.map((e) => e.getAttribute('data-metric') ?? ''));
    assert.ok(listed.includes('osc_kata_nodes'), listed.join(', '));
    assert.ok(
      listed.every((n) => n.toLowerCase().includes('kata')),
      listed.join(', '),
    );
    await shot('metrics-names');
    await page.click('[data-metric=osc_kata_nodes]');
    await page.locator('[data-test=chart] canvas').waitFor({ timeout: LONG });
    assert.ok(Number(await page.locator('[data-test=chart]').getAttribute('data-series')) >= 7, 'one series per kata node state');
    await shot('metrics-plot');
  });

  test('Ctrl-C stops the console and Prometheus with the cluster', async () => {
    const prometheus = descendants(osc.pid ?? 0).filter((p) => p.comm === 'prometheus');
    assert.equal(prometheus.length, 1, 'osc start runs one Prometheus');
    const exited = new Promise((r) => osc.once('exit', r));
    osc.kill('SIGINT');
    await exited;
    await waitFor(
      () =>
        prometheus.every((p) => !existsSync(`/proc/${p.pid}/status`) || /State:\s+Z/.test(readFileSync(`/proc/${p.pid}/status`, 'utf8'))),
      {
        timeoutMs: 30_000,
        message: 'Prometheus gone',
      },
    );
    await assert.rejects(fetch(new URL(consoleUrl).origin), 'the console no longer answers');
  });
});
