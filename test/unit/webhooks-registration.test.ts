import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { registrationDrifted } from '../../src/webhooks/registration.ts';
import { desiredWebhookConfigurations } from '../../src/webhooks/setup.ts';

describe('webhook registration drift', () => {
  const [validating] = desiredWebhookConfigurations({ url: 'https://127.0.0.1:9443' }, 'CA');
  if (!validating) throw new Error('no validating configuration');
  const clone = () => structuredClone(validating);

  test('what the API server adds (defaults) is not drift', () => {
    const live = clone();
    Object.assign(live.webhooks?.[0] ?? {}, { namespaceSelector: {}, objectSelector: {}, matchPolicy: 'Equivalent' });
    live.metadata = { ...live.metadata, resourceVersion: '7', uid: 'u' };
    assert.equal(registrationDrifted(live, validating), false);
  });

  test('deleted, another endpoint, another CA bundle, or a webhook added or removed is drift', () => {
    assert.equal(registrationDrifted(undefined, validating), true);
    const elsewhere = clone();
    const first = (c: typeof validating) => (c.webhooks ?? [])[0] as { clientConfig: { url: string; caBundle: string } };
    first(elsewhere).clientConfig.url = 'https://127.0.0.1:1/dead';
    assert.equal(registrationDrifted(elsewhere, validating), true);
    const otherCa = clone();
    first(otherCa).clientConfig.caBundle = 'b3RoZXI=';
    assert.equal(registrationDrifted(otherCa, validating), true);
    const extra = clone();
    extra.webhooks?.push({ name: 'x' });
    assert.equal(registrationDrifted(extra, validating), true);
    assert.equal(registrationDrifted({ ...clone(), webhooks: [] }, validating), true);
  });
});
