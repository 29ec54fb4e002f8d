import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

export interface ControlPlaneBinaries {
  dir: string;
  etcd: string;
  kubeApiserver: string;
  kubeScheduler: string;
  kubeControllerManager: string;
  kubectl: string;
  kwok: string;
}

export function binariesIn(dir: string): ControlPlaneBinaries {
  return {
    dir,
    etcd: join(dir, 'etcd'),
    kubeApiserver: join(dir, 'kube-apiserver'),
    kubeScheduler: join(dir, 'kube-scheduler'),
    kubeControllerManager: join(dir, 'kube-controller-manager'),
    kubectl: join(dir, 'kubectl'),
    kwok: join(dir, 'kwok'),
  };
}

/**
 * Finds (building on first use) the pinned control plane binaries. OSC_CONTROL_PLANE_DIR points at
 * prebuilt ones instead. The build script's progress goes to our stderr.
 */
export async function controlPlaneBinaries(log?: Logger): Promise<ControlPlaneBinaries> {
  let dir = process.env.OSC_CONTROL_PLANE_DIR;
  if (!dir) {
    log?.info('locating the control plane binaries (the first run builds them from Go modules)');
    dir = await new Promise<string>((resolve, reject) => {
      const child = spawn('bash', [join(repoRoot, 'tools', 'build-control-plane.sh')], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
      });
      child.on('error', reject);
      child.on('exit', (code) =>
        code === 0 ? resolve(out.trim().split('\n').pop() ?? '') : reject(new Error(`tools/build-control-plane.sh exited with ${code}`)),
      );
    });
  }
  return binariesIn(dir);
}
