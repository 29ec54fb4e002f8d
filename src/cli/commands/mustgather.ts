import { existsSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { errorMessage } from '../../kube/errors.ts';
import { mustGather } from '../../mustgather/collect.ts';
import { CliError, type CliIO, type ClusterFlags, connect, displayPath, loadCluster, prepareDirectory, write } from '../common.ts';

export interface MustGatherFlags extends ClusterFlags {
  destDir: string;
}

/** `osc must-gather`: everything support needs (docs/troubleshooting.md), secrets redacted, in a .tar.gz whose path it prints. */
export async function mustGatherCommand(flags: MustGatherFlags, io: CliIO): Promise<number> {
  // Checked before anything is collected: a directory that cannot be made fails at once, by name.
  const destDir = await prepareDirectory('--dest-dir', flags.destDir);
  const client = await connect(await loadCluster(flags));
  try {
    const operatorLog = devOperatorLog(flags);
    const result = await mustGather(client, { destDir, operatorLog });
    if (operatorLog) write(io.stdout, `collected the operator's log ${displayPath(operatorLog)} (osc start's, beside the kubeconfig)`);
    for (const p of result.problems) write(io.stderr, `warning: not collected: ${p}`);
    const rel = relative(process.cwd(), result.archive);
    write(
      io.stdout,
      `must-gather: ${result.files.length} files (secret values redacted) in ${rel && !rel.startsWith('..') ? rel : result.archive}`,
    );
    write(io.stdout, `inspect with: tar -tzf ${result.archive}`);
    return 0;
  } catch (e) {
    throw new CliError(`must-gather failed: ${errorMessage(e)}`);
  } finally {
    await client.close();
  }
}

/**
 * The log of the operator that `osc start` runs in its own process, when the kubeconfig in use is that run's
 * (<home>/kubeconfig, with osc.log beside it): the cluster has no operator pod whose log it could give.
 */
export function devOperatorLog(flags: ClusterFlags): string | undefined {
  const env = process.env.KUBECONFIG?.split(':').filter(Boolean);
  const kubeconfig = flags.kubeconfig ?? (env?.length === 1 ? env[0] : undefined);
  if (!kubeconfig || basename(kubeconfig) !== 'kubeconfig') return undefined;
  const log = join(dirname(kubeconfig), 'osc.log');
  return existsSync(log) ? log : undefined;
}
