/**
 * The harness of the console's browser tests on a stand-in API (test/support/fake-kube.ts): the real
 * console server against objects each test sets, one Chromium page per test, and builders for the
 * objects. Screenshots go to test-artifacts/<suite>/.
 */
import { join } from 'node:path';
import { after, afterEach, before, beforeEach } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { type RunningConsole, startConsole } from '../../src/console/server.ts';
import { artifactsDir, launchBrowser } from './browser.ts';
import { FakeKube } from './fake-kube.ts';

export const KATACONFIGS = '/apis/kataconfiguration.openshift.io/v1/kataconfigs';
export const NODES = '/api/v1/nodes';
export const PODS = '/api/v1/pods';
export const DEPLOYMENTS = '/apis/apps/v1/deployments';
export const RUNTIMECLASSES = '/apis/node.k8s.io/v1/runtimeclasses';
export const LONG = 60_000;
const TOKEN = 'console-states-test-token';

/** What the page's focused element is, as a test reads it in the browser. */
type Doc = { document: { activeElement: { matches(s: string): boolean; textContent: string | null } | null } };
export const focusedMatches = (sel: string) => (globalThis as unknown as Doc).document.activeElement?.matches(sel) ?? false;
export const focusedText = () => (globalThis as unknown as Doc).document.activeElement?.textContent;

export const workers = (n: number) => Array.from({ length: n }, (_, i) => `worker-${i}`);
export const node = (name: string) => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, labels: { 'node-role.kubernetes.io/worker': '' } },
  status: { conditions: [{ type: 'Ready', status: 'True' }] },
});
export const inProgress = (status: string, reason: string, message: string) => ({
  type: 'InProgress',
  status,
  reason,
  message,
  lastTransitionTime: new Date().toISOString(),
});
// biome-ignore lint/suspicious/noExplicitAny: a KataConfig as the test writes it
export const kataConfig = (spec: Record<string, unknown>, status: Record<string, any>, deleting = false) => ({
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

export const installed = (names: string[]) =>
  kataConfig(
    {},
    {
      conditions: [inProgress('False', '', '')],
      kataNodes: { nodeCount: names.length, readyNodeCount: names.length, installed: names },
      runtimeClasses: ['kata'],
    },
  );

export interface ConsoleHarness {
  kube: FakeKube;
  consoleServer: RunningConsole;
  browser: Browser;
  page: Page;
  /** Opens the console at a hash route (#/kataconfigs), signed in. */
  open(hash: string): Promise<void>;
  /** Starts the console server (again, on the same port and token after a close). */
  serve(): Promise<void>;
  shot(name: string): Promise<unknown>;
}

/** Registers the hooks of a browser test file on the stand-in API; call inside its describe. */
export function useConsoleHarness(suite: string): ConsoleHarness {
  const shots = artifactsDir(suite);
  let port = 0;
  const h = {
    kube: new FakeKube(),
    open: async (hash: string) => {
      await h.page.goto(`${h.consoleServer.origin}/?token=${TOKEN}`);
      await h.page.goto(`${h.consoleServer.origin}/${hash}`);
    },
    serve: async () => {
      h.consoleServer = await startConsole({ kubeConfig: h.kube.kubeConfig(), version: 'test', token: TOKEN, port });
      port = Number(new URL(h.consoleServer.origin).port);
    },
    shot: (name: string) => h.page.screenshot({ path: join(shots, `${name}.png`), fullPage: true }),
  } as ConsoleHarness;

  before(async () => {
    h.browser = await launchBrowser();
    await h.kube.start();
    await h.serve();
  });

  beforeEach(async () => {
    await h.page?.close();
    h.page = await h.browser.newPage({ viewport: { width: 1280, height: 900 } });
    for (const r of [KATACONFIGS, NODES, PODS, DEPLOYMENTS, RUNTIMECLASSES]) h.kube.clear(r);
    h.kube.writes.length = 0;
  });

  afterEach(async (t) => {
    // A failed step leaves a picture of the page it failed on.
    if (!(t as unknown as { passed?: boolean }).passed)
      await h.shot(`failed-${t.name.slice(0, 40).replace(/\W+/g, '-')}`).catch(() => undefined);
  });

  after(async () => {
    await h.browser?.close();
    await h.consoleServer?.close();
    await h.kube.stop();
  });
  return h;
}
