import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { cachedNode } from '../../src/controllers/nodecache.ts';
import { NODE_IMAGES, nodeObject } from '../../src/devcluster/nodes.ts';
import { parseWithoutNodeImages } from '../../src/kube/nodejson.ts';
import type { Node } from '../../src/kube/resources.ts';

/** A worker as the API server sends it in a watch event: managedFields, conditions, 50 images, volumes. */
const worker = (images: { names: string[]; sizeBytes: number }[], extraStatus: Record<string, unknown> = {}): Node => {
  const n = nodeObject({ name: 'worker-7', role: 'worker', bootConfig: 'rendered-worker-1', index: 7 });
  n.metadata.resourceVersion = '4242';
  n.metadata.managedFields = [
    {
      manager: 'kwok',
      operation: 'Update',
      subresource: 'status',
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:status': { 'f:conditions': { 'k:{"type":"Ready"}': { 'f:status': {} } }, 'f:images': {} } },
    },
  ];
  const status = n.status as Record<string, unknown>;
  status.conditions = [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is "posting" ready status' }];
  status.images = images;
  Object.assign(status, extraStatus);
  return n;
};
const line = (n: Node, type = 'MODIFIED') => JSON.stringify({ type, object: n });
const parseNodeEvent = (text: string) => parseWithoutNodeImages(Buffer.from(text));
const withoutImages = (n: Node): Node => ({ ...n, status: { ...n.status, images: [] } }) as Node;

describe('Node JSON parsed without its images', () => {
  test('the same object as a whole parse, less the images, and the same cache entry', () => {
    const n = worker(NODE_IMAGES);
    const parsed = parseNodeEvent(line(n)) as { type: string; object: Node };
    assert.equal(parsed.type, 'MODIFIED');
    assert.deepEqual(parsed.object, withoutImages(n));
    assert.deepEqual(cachedNode(parsed.object), cachedNode(n));
  });

  test('what follows the images (volumes, runtime handlers) is kept', () => {
    const extra = {
      volumesInUse: ['kubernetes.io/csi/ebs^vol-1'],
      volumesAttached: [{ name: 'kubernetes.io/csi/ebs^vol-1', devicePath: '' }],
      runtimeHandlers: [{ name: 'kata', features: { recursiveReadOnlyMounts: false } }],
    };
    const n = worker(NODE_IMAGES.slice(0, 3), extra);
    assert.deepEqual((parseNodeEvent(line(n)) as { object: Node }).object, withoutImages(n));
  });

  test('no images, or an empty list: parsed whole, nothing cut from the fields after it', () => {
    const none = worker([]);
    const extra = worker([], { volumesAttached: [{ name: 'v', devicePath: '/dev/x' }] });
    assert.deepEqual((parseNodeEvent(line(none)) as { object: Node }).object, none);
    assert.deepEqual((parseNodeEvent(line(extra)) as { object: Node }).object, extra);
    const bare = { metadata: { name: 'n' } } as Node;
    assert.deepEqual((parseNodeEvent(line(bare)) as { object: Node }).object, bare);
  });

  test('image names that look like the cut (}] inside a name, escapes, quotes): never a wrong object', () => {
    const odd = [
      'registry.example/a}]b:1',
      'registry.example/a}],b:1',
      'registry.example/a}]}:1',
      'registry.example/a}]}},"x":1',
      'registry.example/"quoted"}]',
      'registry.example/tab\there',
      'registry.example/ünïcode}]',
    ];
    for (const name of odd) {
      const n = worker([{ names: [name, 'b'], sizeBytes: 1 }, ...NODE_IMAGES.slice(0, 2)], { volumesInUse: ['v'] });
      const parsed = (parseNodeEvent(line(n)) as { object: Node }).object;
      // Either cut exactly (the images gone, all else equal) or parsed whole; never anything else.
      const images = (parsed.status as { images?: unknown[] }).images;
      if (images?.length) assert.deepEqual(parsed, n, name);
      else assert.deepEqual(parsed, withoutImages(n), name);
    }
  });

  test('an annotation that spells the images key is not taken for it', () => {
    const n = worker(NODE_IMAGES.slice(0, 2));
    n.metadata.annotations = { ...n.metadata.annotations, note: '"images":[{"names":["x"]}],' };
    assert.deepEqual((parseNodeEvent(line(n)) as { object: Node }).object, withoutImages(n));
  });

  test('a list: the images of every node left out, all else kept', () => {
    const nodes = [worker(NODE_IMAGES), worker([]), worker(NODE_IMAGES.slice(0, 1), { volumesInUse: ['v'] })];
    nodes.forEach((n, i) => {
      n.metadata.name = `worker-${i}`;
    });
    const list = { kind: 'NodeList', apiVersion: 'v1', metadata: { resourceVersion: '9' }, items: nodes };
    const parsed = parseWithoutNodeImages(Buffer.from(JSON.stringify(list))) as { items: Node[] };
    assert.deepEqual(parsed, { ...list, items: nodes.map(withoutImages) });
  });

  test('a node alone (the answer to a write), and one without a backslash anywhere', () => {
    const n = worker(NODE_IMAGES.slice(0, 5));
    assert.deepEqual(parseWithoutNodeImages(Buffer.from(JSON.stringify(n))), withoutImages(n));
    delete n.metadata.managedFields;
    n.status = { ...n.status, conditions: [] } as Node['status'];
    assert.deepEqual(parseWithoutNodeImages(Buffer.from(JSON.stringify(n))), withoutImages(n));
  });

  test('a line that is not JSON fails as JSON.parse fails', () => {
    assert.throws(() => parseNodeEvent('{"type":"MODIFIED","object":{"status":{"images":[{"names":["a"]}]'), SyntaxError);
  });
});
