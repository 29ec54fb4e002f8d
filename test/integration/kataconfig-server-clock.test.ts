/**
 * The KataConfig controller measures time on the API server's clock, not on its own wall clock: a replica
 * whose clock was stepped an hour ahead still writes the times the API server would. The plans compare
 * these times with those other components wrote (a pod's Ready time, a node's rollout memory written by the
 * other replica): a grace measured on a clock an hour ahead would end at once.
 *
 * This process's wall clock is put an hour ahead (Date, as the controller sees it); the API server's is
 * the machine's. The condition the first pass writes must carry the server's time.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { oscCRDs } from '../../src/api/crds.ts';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { setupKataConfigController } from '../../src/controllers/kataconfig/controller.ts';
import { openshiftCRDs } from '../../src/devcluster/openshift/crds.ts';
import { Namespaces } from '../../src/kube/resources.ts';
import { openShiftPlatform } from '../../src/platform/openshift/platform.ts';
import { Manager } from '../../src/runtime/manager.ts';
import { RuntimeMetrics } from '../../src/runtime/metrics.ts';
import { testLogger, useControlPlane } from '../support/controlplane.ts';
import { waitFor } from '../support/wait.ts';

const AHEAD_MS = 3_600_000;
const RealDate = Date;

/** Date with the wall clock an hour ahead: `new Date()` and `Date.now()`; parsing and explicit times as they are. */
class AheadDate extends RealDate {
  constructor(...args: ConstructorParameters<typeof Date> | []) {
    if (args.length === 0) super(RealDate.now() + AHEAD_MS);
    else super(...(args as ConstructorParameters<typeof Date>));
  }
  static override now(): number {
    return RealDate.now() + AHEAD_MS;
  }
}

describe("the KataConfig controller's time is the API server's", () => {
  const plane = useControlPlane();

  before(async () => {
    await plane.cp.installCRDs([...oscCRDs(), ...openshiftCRDs()]);
    await plane.cp.client.create(Namespaces, { metadata: { name: OPERATOR_NAMESPACE } });
  });
  after(() => {
    globalThis.Date = RealDate;
  });

  test('a replica whose wall clock is an hour ahead writes the times the API server would', async () => {
    const client = plane.cp.client;
    const mgr = new Manager({ client, log: testLogger(), metrics: new RuntimeMetrics(undefined, { processMetrics: false }) });
    setupKataConfigController(mgr, openShiftPlatform());
    globalThis.Date = AheadDate as DateConstructor;
    const ac = new AbortController();
    const run = mgr.start(ac.signal);
    try {
      const created = await client.create(KataConfigs, { metadata: { name: 'clock' }, spec: {} } as KataConfig);
      const kc = await waitFor(
        async () => {
          const k = await client.get(KataConfigs, 'clock');
          return k.status?.conditions?.some((c) => c.type === 'InProgress') ? k : undefined;
        },
        { timeoutMs: 60_000, message: 'the first pass to write the InProgress condition' },
      );
      const serverCreated = RealDate.parse(created.metadata.creationTimestamp ?? '');
      const written = RealDate.parse(kc.status?.conditions?.find((c) => c.type === 'InProgress')?.lastTransitionTime ?? '');
      // The test bites: this process's clock is an hour past what the API server wrote.
      // biome-ignore lint/complexity/useDateNow: the no-argument constructor is the wall clock a plan would read
      assert.ok(new Date().getTime() - serverCreated > AHEAD_MS - 60_000, 'the wall clock as the controller reads it is an hour ahead');
      assert.ok(
        Math.abs(written - serverCreated) < 60_000,
        `InProgress at ${kc.status?.conditions?.find((c) => c.type === 'InProgress')?.lastTransitionTime}, the KataConfig made at ${created.metadata.creationTimestamp} by the API server's clock`,
      );
    } finally {
      globalThis.Date = RealDate;
      ac.abort();
      await run.catch(() => undefined);
    }
  });
});
