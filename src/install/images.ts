/**
 * Release manifests name every image by digest. A tag can be moved: nodes that pulled it at different
 * times run different builds, and whoever can push the tag can change what a privileged pod on every node
 * runs. The release step (`osc install --dry-run --pin-images`) resolves each tag to the digest it names
 * now and writes `repository:tag@sha256:...` (the tag stays for the reader; the runtime pulls the digest),
 * and refuses to write a manifest in which an image is left by tag.
 */
import type { KubeObject } from '../kube/types.ts';

/** The operator's operand images, passed as RELATED_IMAGE_* (OLM's convention), and the pods they run. */
const PRIVILEGED_OPERANDS: Record<string, string> = {
  RELATED_IMAGE_KATA_MONITOR: 'the kata monitor DaemonSet (privileged, the runtime socket mounted on every kata node)',
  RELATED_IMAGE_KATA_DEPLOY: "kata-deploy's installer DaemonSet (host paths and systemd on every kata node)",
  RELATED_IMAGE_CAA: "the cloud-api-adaptor DaemonSet (the node's pod network)",
};

export interface ImageReference {
  /** Where the manifest names it, e.g. `Deployment osc-controller-manager, container manager`. */
  where: string;
  image: string;
  /** What runs it with node-level rights, for an operand image that does. */
  privileged?: string;
}

const DIGEST = /@sha256:[0-9a-f]{64}$/;
export const isPinned = (image: string): boolean => DIGEST.test(image);

interface PodSpecLike {
  containers?: { name: string; image?: string; env?: { name: string; value?: string }[] }[];
  initContainers?: { name: string; image?: string; env?: { name: string; value?: string }[] }[];
}

function podSpecOf(o: KubeObject): PodSpecLike | undefined {
  const spec = (o as { spec?: { template?: { spec?: PodSpecLike }; jobTemplate?: { spec?: { template?: { spec?: PodSpecLike } } } } }).spec;
  if (o.kind === 'Pod') return spec as PodSpecLike | undefined;
  return spec?.template?.spec ?? spec?.jobTemplate?.spec?.template?.spec;
}

/** Every image the objects name: their containers', and the operand images passed to them as RELATED_IMAGE_*. */
export function imageReferences(objects: readonly KubeObject[]): ImageReference[] {
  const refs: ImageReference[] = [];
  for (const o of objects) {
    const pod = podSpecOf(o);
    if (!pod) continue;
    for (const c of [...(pod.initContainers ?? []), ...(pod.containers ?? [])]) {
      const at = `${o.kind} ${o.metadata.name}, container ${c.name}`;
      if (c.image) refs.push({ where: at, image: c.image });
      for (const e of c.env ?? []) {
        if (!e.name.startsWith('RELATED_IMAGE_') || !e.value) continue;
        const privileged = PRIVILEGED_OPERANDS[e.name];
        refs.push({ where: `${at}, env ${e.name}`, image: e.value, ...(privileged ? { privileged } : {}) });
      }
    }
  }
  return refs;
}

/**
 * What keeps the objects from being a release: each image named by tag only, privileged ones first and
 * saying what runs them. Empty when every image is pinned.
 */
export function unpinnedImages(objects: readonly KubeObject[]): string[] {
  const loose = imageReferences(objects).filter((r) => !isPinned(r.image));
  loose.sort((a, b) => Number(!!b.privileged) - Number(!!a.privileged));
  return loose.map((r) => `${r.image} (${r.where}${r.privileged ? `: ${r.privileged}` : ''})`);
}

/** The objects with each image replaced by `image@digest` from `digests` (keyed by the image as written). */
export function pinImages(objects: readonly KubeObject[], digests: ReadonlyMap<string, string>): KubeObject[] {
  const pin = (image: string) => {
    if (isPinned(image)) return image;
    const digest = digests.get(image);
    return digest ? `${image.replace(/@sha256:.*$/, '')}@${digest}` : image;
  };
  return objects.map((o) => {
    const copy = structuredClone(o);
    const pod = podSpecOf(copy);
    for (const c of [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])]) {
      if (c.image) c.image = pin(c.image);
      for (const e of c.env ?? []) if (e.name.startsWith('RELATED_IMAGE_') && e.value) e.value = pin(e.value);
    }
    return copy;
  });
}

/**
 * A digests file, as a release pipeline writes it from its builds and mirrors: one `<image> <sha256:...>`
 * per line (`#` starts a comment). Throws naming the line that is not one.
 */
export function parseDigests(text: string, source: string): Map<string, string> {
  const out = new Map<string, string>();
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/#.*$/, '').trim();
    if (!line) return;
    const [image, digest, extra] = line.split(/\s+/);
    if (!image || !digest || extra !== undefined || !/^sha256:[0-9a-f]{64}$/.test(digest))
      throw new Error(`${source}:${i + 1}: expected "<image> sha256:<64 hex digits>", got "${raw.trim()}"`);
    out.set(image, digest);
  });
  return out;
}
