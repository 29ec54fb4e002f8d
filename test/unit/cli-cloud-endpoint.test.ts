/**
 * `osc run --cloud-api-endpoint` / `--cloud-api-ca-file` (or $OSC_CLOUD_API_ENDPOINT / $OSC_CLOUD_API_CA_FILE):
 * the flag wins over the environment, only https is taken, and a CA file that cannot be read is refused
 * naming the flag, before the operator starts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { cloudEndpoint, type RunFlags } from '../../src/cli/commands/run.ts';

const flags = (over: Partial<RunFlags>) => over as RunFlags;

test('the cloud API endpoint: flag over environment, https only, the CA read', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'osc-endpoint-'));
  const ca = join(dir, 'ca.pem');
  writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
  assert.deepEqual(await cloudEndpoint(flags({}), {}), {});
  assert.deepEqual(await cloudEndpoint(flags({}), { OSC_CLOUD_API_ENDPOINT: 'https://mirror.example:8443', OSC_CLOUD_API_CA_FILE: ca }), {
    url: 'https://mirror.example:8443',
    ca: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
  });
  assert.equal(
    (await cloudEndpoint(flags({ cloudApiEndpoint: 'https://flag.example' }), { OSC_CLOUD_API_ENDPOINT: 'https://env.example' })).url,
    'https://flag.example',
  );
  await assert.rejects(
    cloudEndpoint(flags({ cloudApiEndpoint: 'http://plain.example' }), {}),
    /--cloud-api-endpoint http:\/\/plain.example: the cloud API endpoint must be an https:\/\/ URL/,
  );
  await assert.rejects(
    cloudEndpoint(flags({ cloudApiCaFile: join(dir, 'missing.pem') }), {}),
    /--cloud-api-ca-file .*missing\.pem: .*ENOENT|no such file/,
  );
});
