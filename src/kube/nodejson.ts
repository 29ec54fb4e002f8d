/**
 * Node JSON parsed without the nodes' container images. A kubelet reports up to 50 images in its node's
 * status, by digest and tag: of a worker's 13 KB of JSON, about 9 KB, which a client that never reads them
 * (the operator: src/controllers/nodecache.ts says what it keeps of a Node) would decode, parse and collect
 * on every Node event, list page and write answer. At 1,000 workers that was about a quarter of what the
 * operator allocated during an install.
 *
 * Each images array is cut from the bytes, before they are decoded, only where the cut cannot be wrong: it
 * starts at `"images":[{` (no other field of a Node or a watch event holds an array of objects under that
 * key, and a quote inside a JSON string is always escaped, so the text cannot occur inside a string), it
 * ends at the first `}]` after that, which a `,` or `}` follows, and no backslash lies between, so every
 * quote in the stretch is a string's own. An image name that itself held `}]` would end a cut inside a
 * string, which leaves text that JSON.parse refuses; then, as for any other surprise, the whole document
 * is parsed as it came.
 */

const START = Buffer.from('"images":[{');
const END = Buffer.from('}]');
const EMPTY = Buffer.from('"images":[]');
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const CLOSE_BRACE = 0x7d;

/** Parses JSON holding Node objects (one, a watch event of one, or a list) with every `status.images` empty. */
export function parseWithoutNodeImages(json: Buffer): unknown {
  let start = json.indexOf(START);
  if (start < 0) return JSON.parse(json.toString('utf8'));
  const pieces: Buffer[] = [];
  let from = 0;
  // The first backslash at or after `start` (-1: none), found again only once `start` has passed it.
  let backslash = json.indexOf(BACKSLASH, start);
  while (start >= 0) {
    const end = json.indexOf(END, start + START.length);
    if (end < 0) break;
    const next = json[end + END.length];
    if (backslash >= 0 && backslash < start) backslash = json.indexOf(BACKSLASH, start);
    if ((next === COMMA || next === CLOSE_BRACE) && (backslash < 0 || backslash > end)) {
      pieces.push(json.subarray(from, start), EMPTY);
      from = end + END.length;
    }
    start = json.indexOf(START, end + END.length);
  }
  if (!pieces.length) return JSON.parse(json.toString('utf8'));
  pieces.push(json.subarray(from));
  try {
    return JSON.parse(Buffer.concat(pieces).toString('utf8'));
  } catch {
    return JSON.parse(json.toString('utf8'));
  }
}
