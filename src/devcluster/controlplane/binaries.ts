import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

export interface ControlPlaneBinaries {
  dir: string;
  etcd: string;
  /** etcd's offline tool (snapshot restore). */
  etcdutl: string;
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
    etcdutl: join(dir, 'etcdutl'),
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
    dir = await runBuildScript('build-control-plane.sh');
  }
  return binariesIn(dir);
}

/**
 * Runs tools/<script> (a cached build: its progress on our stderr) and answers the last line it prints, the
 * path of what it built. A script ended by a signal (Ctrl-C reaches the whole process group, the script
 * included) says so, rather than "exited with null".
 */
export function runBuildScript(script: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const child = spawn('bash', [join(repoRoot, 'tools', script)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0) resolve(out.trim().split('\n').pop() ?? '');
      else if (signal) reject(new BuildInterruptedError(`tools/${script} was stopped by ${signal}`));
      else reject(new Error(`tools/${script} failed (exit code ${code}); its messages are above`));
    });
  });
}

/** A build stopped by a signal: the user pressed Ctrl-C (or the run is being stopped), not a failed build. */
export class BuildInterruptedError extends Error {
  override name = 'BuildInterruptedError';
}
