import { CONFIDENTIAL_MACHINE_CONFIG, IGNITION_VERSION, MC_ROLE_LABEL } from '../../api/names.ts';
import type { MachineConfig } from '../../api/openshift.ts';
import type { OwnerReference } from '../../kube/types.ts';

/**
 * The node side of confidential containers on OpenShift (docs/confidential-containers.md, "The node
 * configuration"): for the handler of `kata-cc` (kata-tdx, kata-snp or kata-se), a CRI-O runtime entry and
 * the kata configuration that makes its VMs confidential, in one MachineConfig for the kata pool. The
 * Machine Config Operator rolls it out like any MachineConfig change, one node at a time; osc writes it
 * while a class needs the handler and deletes it once none does (the platform input's extraHandlers). Pure.
 */

/** What makes one TEE's kata VMs confidential: the settings beyond the extension's defaults. */
interface TeeRuntime {
  /** What the files say they are for. */
  title: string;
  /** The hypervisor settings of this TEE's guests (TOML lines of `[hypervisor.qemu]`). */
  hypervisor: string[];
}

/**
 * The kata configuration every confidential handler shares: a confidential guest cannot have memory or CPUs
 * hot-plugged nor share the host's file system, so the sandbox is sized at start and images are pulled in
 * the guest; the pod may carry its initdata (`io.katacontainers.config.hypervisor.cc_init_data`), and a
 * guest booting its firmware and attestation agent needs longer than the default to answer.
 */
const SHARED_HYPERVISOR = [
  'confidential_guest = true',
  'shared_fs = "none"',
  'enable_annotations = ["cc_init_data", "default_vcpus", "default_memory"]',
];

/** Per handler: what differs between the TEEs (firmware built for the TEE, its guest switch, its machine). */
const TEE_RUNTIMES: Readonly<Record<string, TeeRuntime>> = {
  'kata-tdx': {
    title: 'Intel TDX',
    hypervisor: ['machine_type = "q35"', 'firmware = "/usr/share/edk2/ovmf/OVMF.inteltdx.fd"', 'disable_image_nvdimm = true'],
  },
  'kata-snp': {
    title: 'AMD SEV-SNP',
    hypervisor: ['machine_type = "q35"', 'firmware = "/usr/share/edk2/ovmf/OVMF.amdsev.fd"', 'sev_snp_guest = true'],
  },
  'kata-se': {
    title: 'IBM Secure Execution',
    hypervisor: ['machine_type = "s390-ccw-virtio"'],
  },
};

/** The handlers this MachineConfig can configure, in name order. */
export const CONFIDENTIAL_HANDLERS: readonly string[] = Object.keys(TEE_RUNTIMES).sort();

/** Of the handlers the classes need, those the MachineConfig configures (the GPU ones are not among them). */
export const confidentialHandlers = (extraHandlers: readonly string[] | undefined): string[] =>
  [...new Set(extraHandlers ?? [])].filter((h) => CONFIDENTIAL_HANDLERS.includes(h)).sort();

/** Where the kata configuration of a handler lives on the node (CRI-O names it for the handler). */
export const kataConfigPath = (handler: string): string => `/etc/kata-containers/${handler}/configuration.toml`;
/** The CRI-O drop-in that declares the handler. */
export const crioDropInPath = (handler: string): string => `/etc/crio/crio.conf.d/50-${handler}`;

const header = (handler: string) =>
  `# ${TEE_RUNTIMES[handler]?.title} guests for the ${handler} runtime handler, written by the OpenShift sandboxed\n` +
  `# containers operator (MachineConfig ${CONFIDENTIAL_MACHINE_CONFIG}); an edit here is undone by the next update.\n`;

/**
 * CRI-O's runtime entry: the kata shim, with the TEE's configuration, and the kata annotations passed on
 * (kata's own enable_annotations then decides which it accepts), so that initdata reaches the shim.
 */
export function crioDropIn(handler: string): string {
  return [
    header(handler),
    `[crio.runtime.runtimes.${handler}]`,
    'runtime_path = "/usr/bin/containerd-shim-kata-v2"',
    'runtime_type = "vm"',
    'runtime_root = "/run/vc"',
    `runtime_config_path = "${kataConfigPath(handler)}"`,
    'privileged_without_host_devices = true',
    'allowed_annotations = ["io.katacontainers.*"]',
    '',
  ].join('\n');
}

/**
 * The handler's kata configuration: only what the TEE changes. Everything left out (the hypervisor's path,
 * the guest kernel and image) is kata's built-in default, which the sandboxed-containers extension sets.
 */
export function kataConfiguration(handler: string): string {
  const tee = TEE_RUNTIMES[handler];
  if (!tee) throw new Error(`no confidential configuration for handler ${handler}`);
  return [
    header(handler),
    '[hypervisor.qemu]',
    ...SHARED_HYPERVISOR,
    ...tee.hypervisor,
    '',
    '[agent.kata]',
    'dial_timeout = 90',
    '',
    '[runtime]',
    'static_sandbox_resource_mgmt = true',
    '',
  ].join('\n');
}

const file = (path: string, body: string) => ({
  path,
  mode: 0o644,
  overwrite: true,
  contents: { source: `data:text/plain;charset=utf-8;base64,${Buffer.from(body).toString('base64')}` },
});

/** The MachineConfig for the handlers, on a pool (kata-oc, or master on a compact cluster). */
export function desiredConfidentialMachineConfig(
  pool: string,
  kataConfigName: string,
  handlers: readonly string[],
  owner?: OwnerReference,
): MachineConfig {
  return {
    apiVersion: 'machineconfiguration.openshift.io/v1',
    kind: 'MachineConfig',
    metadata: {
      name: CONFIDENTIAL_MACHINE_CONFIG,
      labels: { [MC_ROLE_LABEL]: pool, app: kataConfigName },
      ...(owner ? { ownerReferences: [owner] } : {}),
    },
    spec: {
      config: {
        ignition: { version: IGNITION_VERSION },
        storage: {
          files: handlers.flatMap((h) => [file(crioDropInPath(h), crioDropIn(h)), file(kataConfigPath(h), kataConfiguration(h))]),
        },
      },
    },
  };
}
