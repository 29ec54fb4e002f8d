import { relative } from 'node:path';
import { errorMessage } from '../../kube/errors.ts';
import { mustGather } from '../../mustgather/collect.ts';
import { CliError, type CliIO, type ClusterFlags, connect, loadCluster, prepareDirectory, write } from '../common.ts';

export interface MustGatherFlags extends ClusterFlags {
  destDir: string;
}

/** `osc must-gather`: everything support needs (docs/troubleshooting.md), secrets redacted, in a .tar.gz whose path it prints. */
export async function mustGatherCommand(flags: MustGatherFlags, io: CliIO): Promise<number> {
  // Checked before anything is collected: a directory that cannot be made fails at once, by name.
  const destDir = await prepareDirectory('--dest-dir', flags.destDir);
  const client = await connect(await loadCluster(flags));
  try {
    const result = await mustGather(client, { destDir });
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
