import { after, before } from 'node:test';
import { ControlPlane, type ControlPlaneOptions } from '../../src/devcluster/controlplane.ts';
import { createLogger, silentLogger } from '../../src/runtime/log.ts';

/** Test logs are silent unless OSC_TEST_LOG=debug|info|... is set. */
export function testLogger() {
  const level = process.env.OSC_TEST_LOG;
  return level ? createLogger({ level, destination: process.stderr }) : silentLogger();
}

/** Starts a real etcd + kube-apiserver and says which version runs (the watchdogs stop it if we die). */
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const t0 = Date.now();
  const cp = await ControlPlane.start({ log: testLogger(), ...opts });
  console.log(`# control plane: kube-apiserver ${cp.version} at ${cp.apiserverUrl}, ready in ${Date.now() - t0} ms`);
  return cp;
}

/**
 * One control plane for a whole test file: started before its first test, stopped after its last.
 * Call at the top level of the file (node:test hooks registered inside another hook attach to that hook).
 */
export function useControlPlane(opts: ControlPlaneOptions = {}): { readonly cp: ControlPlane } {
  const ref: { cp?: ControlPlane } = {};
  before(async () => {
    ref.cp = await startControlPlane(opts);
  });
  after(() => ref.cp?.stop());
  return {
    get cp(): ControlPlane {
      if (!ref.cp) throw new Error('control plane not started yet: use it inside tests or hooks');
      return ref.cp;
    },
  };
}
