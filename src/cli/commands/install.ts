import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pino } from 'pino';
import { KataConfigs } from '../../api/kataconfig.ts';
import { objectName } from '../../api/meta.ts';
import { OPERATOR_NAMESPACE } from '../../api/names.ts';
import {
  applyAll,
  deleteAll,
  displayName,
  INSTALL_FIELD_MANAGER,
  isOptionalAPI,
  OPERATOR_FIELD_MANAGER,
  pruneUnshipped,
} from '../../install/apply.ts';
import { imageReferences, isPinned, parseDigests, pinImages, unpinnedImages } from '../../install/images.ts';
import { adoptKataDeployIdentity, kataDeployIdentity } from '../../install/katadeploy-rbac.ts';
import { configFiles, fileText, type ManifestFile, manifestFiles, NAMES, webhookConfigurations } from '../../install/manifests.ts';
import { LEADER_ELECTION_LEASE } from '../../install/rbac.ts';
import { resolveDigest } from '../../install/registry.ts';
import type { KubeClient } from '../../kube/client.ts';
import { errorMessage } from '../../kube/errors.ts';
import type { KubeObject } from '../../kube/types.ts';
import { DEFAULT_PLATFORM, platformCluster } from '../../platform/index.ts';
import type { PlatformName } from '../../platform/platform.ts';
import { WebhookCertificates } from '../../webhooks/certificates.ts';
import { CERT_MANAGER, CERT_SECRETS, certManagerObjects, chooseCertSource, discoverCertServices } from '../../webhooks/certsource.ts';
import {
  CliError,
  type CliIO,
  type ClusterFlags,
  connect,
  fsReason,
  hasKataConfigAPI,
  loadCluster,
  prepareDirectory,
  SAMPLE_KATACONFIG,
  write,
} from '../common.ts';

export interface InstallFlags extends ClusterFlags {
  /**
   * `client` (or bare --dry-run): print the manifests, no cluster needed. `server`: ask the cluster what an
   * install would change, and print that report (the same lines as an install) without writing anything.
   */
  dryRun?: boolean | 'client' | 'server';
  outputDir?: string;
  image?: string;
  logLevel: string;
  distribution?: PlatformName;
  /** Include objects of APIs a cluster may lack (the ServiceMonitor); unset: yes on OpenShift, no elsewhere. */
  serviceMonitor?: boolean;
  /** Name every image by digest (the release step): resolved from the registries, or from --image-digests. */
  pinImages?: boolean;
  /** A file of `<image> sha256:<digest>` lines to pin with, instead of asking the registries. */
  imageDigests?: string;
}

/**
 * With --pin-images or --image-digests: the files with every image named by digest, or an error naming
 * each image that could not be pinned (a release never ships a tag).
 */
async function pinned(files: ManifestFile[], flags: InstallFlags): Promise<ManifestFile[]> {
  if (!flags.pinImages && !flags.imageDigests) return files;
  let digests = new Map<string, string>();
  if (flags.imageDigests) {
    let text: string;
    try {
      text = await readFile(flags.imageDigests, 'utf8');
    } catch (e) {
      throw new CliError(`--image-digests: cannot read ${flags.imageDigests}: ${fsReason(e)}`);
    }
    try {
      digests = parseDigests(text, flags.imageDigests);
    } catch (e) {
      throw new CliError(`--image-digests: ${errorMessage(e)}`);
    }
  } else {
    const failures: string[] = [];
    for (const r of imageReferences(files.flatMap((f) => f.objects))) {
      if (isPinned(r.image) || digests.has(r.image)) continue;
      try {
        digests.set(r.image, await resolveDigest(r.image));
      } catch (e) {
        failures.push(errorMessage(e));
      }
    }
    if (failures.length)
      throw new CliError(`--pin-images: cannot resolve ${failures.join('; ')}. Give the digests with --image-digests <file>.`);
  }
  const out = files.map((f) => ({ ...f, objects: pinImages(f.objects, digests) }));
  const loose = unpinnedImages(out.flatMap((f) => f.objects));
  if (loose.length)
    throw new CliError(
      `--image-digests: no digest for ${loose.join('; ')}. Add a line "<image> sha256:<digest>" for each to ${flags.imageDigests}.`,
    );
  return out;
}

/** `osc install`: the manifests (or, with --dry-run, just print them), then the webhook certificate. */
export async function install(flags: InstallFlags, io: CliIO, programName: string): Promise<number> {
  const dryRun = flags.dryRun === 'server' ? 'server' : flags.dryRun ? 'client' : undefined;
  if (flags.outputDir && dryRun !== 'client')
    throw new CliError('--output-dir writes the manifests instead of installing them: add --dry-run (--dry-run=client)');
  const options = { image: flags.image, logLevel: flags.logLevel };
  // --output-dir without --distribution writes the tree committed as config/: both distributions' (configFiles).
  const tree = dryRun === 'client' && flags.outputDir && !flags.distribution;
  const all = tree ? await configFiles(options) : await manifestFiles({ ...options, distribution: flags.distribution });
  // Every OpenShift serves the Prometheus Operator's API; a plain Kubernetes cluster does only where someone
  // installed it, and `kubectl apply` of a ServiceMonitor there fails the whole apply. So the kubernetes
  // manifests carry such objects only when asked for, and say what they left out. (The config/ tree keeps
  // it in a folder of its own, prometheus-operator/.)
  const withOptional = tree || (flags.serviceMonitor ?? !!platformCluster(flags.distribution ?? DEFAULT_PLATFORM).prometheusOperator);
  const chosen = withOptional
    ? all
    : all.map((f) => ({ ...f, objects: f.objects.filter((o) => !isOptionalAPI(o)) })).filter((f) => f.objects.length);
  const leftOut = withOptional ? [] : all.flatMap((f) => f.objects.filter(isOptionalAPI));
  for (const o of leftOut) {
    write(
      io.stderr,
      `${displayName(o)} left out: ${o.apiVersion} is served only where the Prometheus Operator runs (add --service-monitor to include it)`,
    );
  }
  const files = await pinned(chosen, flags);
  if (dryRun === 'client') {
    if (flags.outputDir) {
      const dir = await prepareDirectory('--output-dir', flags.outputDir);
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
    return await applyToCluster(client, files, { dryRun: dryRun === 'server', distribution: flags.distribution }, io, programName);
  } catch (e) {
    if (e instanceof CliError) throw e;
    throw new CliError(`install failed: ${errorMessage(e)}`);
  } finally {
    await client.close();
  }
}

/**
 * Installs, or upgrades in place, one line per object (created, configured with the fields it changed,
 * unchanged, removed because this version no longer ships it); with dryRun, the same report from the API
 * server's dry run, and nothing written.
 */
async function applyToCluster(
  client: KubeClient,
  files: ManifestFile[],
  opts: { dryRun: boolean; distribution?: PlatformName },
  io: CliIO,
  programName: string,
): Promise<number> {
  const { dryRun } = opts;
  const out = (line: string) => write(io.stdout, line);
  const webhookFile = files.find((f) => f.file.includes('webhook'));
  const objects = files.filter((f) => f !== webhookFile).flatMap((f) => f.objects);
  await applyAll(client, objects, out, { dryRun });
  if (
    !dryRun &&
    opts.distribution &&
    platformCluster(opts.distribution).nodeInstaller &&
    (await adoptKataDeployIdentity(client, OPERATOR_NAMESPACE))
  )
    out("kata-deploy's ServiceAccount and RBAC taken over from the KataConfig that owned them (an earlier operator made them)");
  // The webhook certificate, from the source the operator will choose too (the platform's service, else
  // osc's own), and the webhook configurations trusting it, so that admission holds before the operator runs.
  const source = chooseCertSource('auto', await discoverCertServices(client), false);
  const certs = new WebhookCertificates({
    client,
    namespace: OPERATOR_NAMESPACE,
    service: NAMES.webhookService,
    source,
    log: pino({ enabled: false }),
  });
  if (dryRun) {
    // Read only: the trust the webhook configurations would get is the one the Secret holds now.
    const present = await certs.refresh();
    out(
      `secret/${certs.secretName} ${present ? 'unchanged' : source === 'self-signed' ? 'created' : `requested from ${source}`} (webhook serving certificate) (dry run)`,
    );
  } else {
    await certs.prepare();
    out(`secret/${certs.secretName} ${source === 'self-signed' ? 'ready' : `requested from ${source}`} (webhook serving certificate)`);
  }
  const webhooks = await webhookConfigurations(certs.trust());
  await applyAll(client, webhooks, out, { fieldManager: OPERATOR_FIELD_MANAGER, dryRun });
  await pruneUnshipped(client, [...objects, ...webhooks], out, dryRun);
  write(
    io.stdout,
    dryRun
      ? '\nDry run: nothing was written. Run the same command without --dry-run=server to make these changes.'
      : [
          '',
          `osc is installed in namespace ${OPERATOR_NAMESPACE} (deployment ${NAMES.deployment}).`,
          `Next: create a KataConfig to install kata on the worker nodes, e.g. "kubectl create -f ${SAMPLE_KATACONFIG}",`,
          `and follow it with "${programName} status --watch".`,
        ].join('\n'),
  );
  return 0;
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
        const name = objectName(existing[0]);
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
      // kata-deploy's identity, where the install was for plain Kubernetes (elsewhere it is not there: gone already).
      if (f.file.startsWith('20-')) objects.push(...kataDeployIdentity(OPERATOR_NAMESPACE));
      if (f.file.startsWith('30-')) {
        // What the operator created at run time in its namespace (deleted before the namespace).
        // The webhook certificate of every source (only the ones that exist are deleted); cert-manager's
        // objects answer 404 where cert-manager is not served, which counts as gone.
        objects.push(
          ...certManagerObjects(OPERATOR_NAMESPACE, NAMES.webhookService),
          ...Object.values(CERT_SECRETS).map((name) => ({
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: { name, namespace: OPERATOR_NAMESPACE },
          })),
          { apiVersion: 'v1', kind: 'Secret', metadata: { name: CERT_MANAGER.caSecret, namespace: OPERATOR_NAMESPACE } },
          { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: LEADER_ELECTION_LEASE, namespace: OPERATOR_NAMESPACE } },
          // Installed with --distribution kubernetes only; elsewhere it answers 404, which counts as gone.
          { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: NAMES.priorityClass } },
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
