import { mkdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { KataConfigs } from '../../api/kataconfig.ts';
import { OPERATOR_NAMESPACE } from '../../api/names.ts';
import { applyAll, deleteAll, INSTALL_FIELD_MANAGER, OPERATOR_FIELD_MANAGER } from '../../install/apply.ts';
import { fileText, manifestFiles, NAMES, webhookConfigurations } from '../../install/manifests.ts';
import { LEADER_ELECTION_LEASE } from '../../install/rbac.ts';
import { errorMessage } from '../../kube/errors.ts';
import type { KubeObject } from '../../kube/types.ts';
import { loadOrCreateWebhookTLS, WEBHOOK_SECRET } from '../../webhooks/setup.ts';
import { CliError, type CliIO, type ClusterFlags, connect, hasKataConfigAPI, loadCluster, SAMPLE_KATACONFIG, write } from '../common.ts';

export interface InstallFlags extends ClusterFlags {
  dryRun?: boolean;
  outputDir?: string;
  image?: string;
  logLevel: string;
  distribution?: 'openshift' | 'kubernetes';
}

/** `osc install`: the manifests (or, with --dry-run, just print them), then the webhook certificate. */
export async function install(flags: InstallFlags, io: CliIO, programName: string): Promise<number> {
  if (flags.outputDir && !flags.dryRun) throw new CliError('--output-dir writes the manifests instead of installing them: add --dry-run');
  const files = await manifestFiles({ image: flags.image, logLevel: flags.logLevel, distribution: flags.distribution });
  if (flags.dryRun) {
    if (flags.outputDir) {
      const dir = await prepareOutputDir(flags.outputDir);
      for (const f of files) {
        const path = join(dir, f.file);
        try {
          await mkdir(dirname(path), { recursive: true });
          await writeFile(path, fileText(f));
        } catch (e) {
          throw new CliError(`--output-dir: cannot write ${path}: ${fsReason(e)}`);
        }
        write(io.stdout, `wrote ${path}`);
      }
    } else {
      io.stdout.write(files.map(fileText).join('---\n'));
    }
    return 0;
  }

  const client = await connect(await loadCluster(flags), { requireKataConfigAPI: false, fieldManager: INSTALL_FIELD_MANAGER });
  try {
    const out = (line: string) => write(io.stdout, line);
    const webhookFile = files.find((f) => f.file.includes('webhook'));
    await applyAll(
      client,
      files.filter((f) => f !== webhookFile).flatMap((f) => f.objects),
      out,
    );
    // The serving certificate the operator's webhooks present, and its CA in the webhook configurations
    // (the operator reuses an existing secret, so both agree).
    const tls = await loadOrCreateWebhookTLS(client, OPERATOR_NAMESPACE);
    out(`secret/${WEBHOOK_SECRET} ready (webhook serving certificate)`);
    await applyAll(client, await webhookConfigurations(tls.caPem), out, OPERATOR_FIELD_MANAGER);
    write(
      io.stdout,
      [
        '',
        `osc is installed in namespace ${OPERATOR_NAMESPACE} (deployment ${NAMES.deployment}).`,
        `Next: create a KataConfig to install kata on the worker nodes, e.g. "kubectl create -f ${SAMPLE_KATACONFIG}",`,
        `and follow it with "${programName} status --watch".`,
      ].join('\n'),
    );
    return 0;
  } catch (e) {
    if (e instanceof CliError) throw e;
    throw new CliError(`install failed: ${errorMessage(e)}`);
  } finally {
    await client.close();
  }
}

const fsReason = (e: unknown): string => {
  const code = (e as NodeJS.ErrnoException).code;
  const known: Record<string, string> = {
    EACCES: 'permission denied',
    EPERM: 'operation not permitted',
    EROFS: 'read-only file system',
    ENOSPC: 'no space left on the device',
    EISDIR: 'it is a directory',
    ENOTDIR: 'a part of the path is a file, not a directory',
    ENOENT: 'this file system does not allow creating it',
  };
  return (code && known[code]) ?? errorMessage(e);
};

/**
 * Makes --output-dir (and its missing parents) one level at a time. Node's recursive mkdir loops forever
 * where mkdir answers ENOENT for a parent that exists (e.g. under /proc), and reports a file in the way as
 * a bare EEXIST: both become an error that names the directory and what to do.
 */
export async function prepareOutputDir(outputDir: string): Promise<string> {
  const dir = resolve(outputDir);
  const missing: string[] = [];
  for (let p = dir; ; p = dirname(p)) {
    const st = await stat(p).catch((e: NodeJS.ErrnoException) => (e.code === 'ENOENT' ? undefined : e));
    if (st instanceof Error) throw new CliError(`--output-dir ${outputDir}: cannot use ${p}: ${fsReason(st)}`);
    if (st) {
      if (!st.isDirectory())
        throw new CliError(`--output-dir ${outputDir}: ${p} exists and is not a directory: choose another directory or remove the file`);
      break;
    }
    missing.unshift(p);
    if (dirname(p) === p) break;
  }
  for (const p of missing) {
    try {
      await mkdir(p);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST' && (await stat(p)).isDirectory()) continue;
      throw new CliError(`--output-dir ${outputDir}: cannot create directory ${p}: ${fsReason(e)}; choose a directory you can write to`);
    }
  }
  return dir;
}

export interface UninstallFlags extends ClusterFlags {
  keepNamespace?: boolean;
}

/** `osc uninstall`: refuses while a KataConfig exists (kata would be left on the nodes), else removes what install made. */
export async function uninstall(flags: UninstallFlags, io: CliIO): Promise<number> {
  const client = await connect(await loadCluster(flags), { requireKataConfigAPI: false, fieldManager: INSTALL_FIELD_MANAGER });
  try {
    if (await hasKataConfigAPI(client)) {
      const existing = (await client.list(KataConfigs)).items;
      if (existing.length) {
        const name = existing[0]?.metadata.name ?? '';
        const deleting = existing[0]?.metadata.deletionTimestamp;
        throw new CliError(
          `KataConfig "${name}" still exists${deleting ? ' (its deletion is in progress)' : ''}: ` +
            `${deleting ? 'wait until it is gone' : `delete it first ("kubectl delete kataconfig ${name}") and wait until it is gone`}, ` +
            'so that the operator removes kata from the nodes. Uninstalling the operator now would leave kata on the nodes ' +
            'and the KataConfig stuck on its finalizer.',
        );
      }
    }
    const files = await manifestFiles();
    const objects: KubeObject[] = [];
    for (const f of files) {
      if (f.file.startsWith('00-') && flags.keepNamespace) continue;
      objects.push(...f.objects);
      if (f.file.startsWith('30-')) {
        // What the operator created at run time in its namespace (deleted before the namespace).
        objects.push(
          { apiVersion: 'v1', kind: 'Secret', metadata: { name: WEBHOOK_SECRET, namespace: OPERATOR_NAMESPACE } },
          { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: LEADER_ELECTION_LEASE, namespace: OPERATOR_NAMESPACE } },
        );
      }
    }
    const deleted = await deleteAll(client, objects, (line) => write(io.stdout, line));
    if (deleted === 0) throw new CliError('osc is not installed in this cluster: nothing to uninstall');
    write(io.stdout, `\nosc is uninstalled${flags.keepNamespace ? ` (namespace ${OPERATOR_NAMESPACE} kept)` : ''}.`);
    return 0;
  } catch (e) {
    if (e instanceof CliError) throw e;
    throw new CliError(`uninstall failed: ${errorMessage(e)}`);
  } finally {
    await client.close();
  }
}
