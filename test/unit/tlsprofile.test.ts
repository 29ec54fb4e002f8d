import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_TLS_OPTIONS, tlsServerOptions } from '../../src/runtime/tlsprofile.ts';

describe('TLS security profiles', () => {
  test('no profile, or no type, is Intermediate: TLS 1.2 and up, AEAD ciphers only', () => {
    for (const p of [undefined, {}, { type: '' }]) {
      const o = tlsServerOptions(p);
      assert.equal(o.profile, 'Intermediate');
      assert.equal(o.minVersion, 'TLSv1.2');
    }
    assert.deepEqual(DEFAULT_TLS_OPTIONS, tlsServerOptions({ type: 'Intermediate' }));
    assert.doesNotMatch(DEFAULT_TLS_OPTIONS.ciphers, /-SHA(:|$)|CBC|DES/);
  });

  test('Modern is TLS 1.3 only; Old reaches down to TLS 1.0 and its CBC and 3DES ciphers', () => {
    const modern = tlsServerOptions({ type: 'Modern' });
    assert.equal(modern.minVersion, 'TLSv1.3');
    assert.equal(modern.ciphers, 'TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256');
    const old = tlsServerOptions({ type: 'Old' });
    assert.equal(old.minVersion, 'TLSv1');
    assert.match(old.ciphers, /:ECDHE-RSA-AES128-SHA:/);
    assert.match(old.ciphers, /DES-CBC3-SHA$/);
  });

  test('Custom takes OpenSSL or IANA cipher names and its minimum version; mistakes name the field', () => {
    const c = tlsServerOptions({
      type: 'Custom',
      custom: { minTLSVersion: 'VersionTLS11', ciphers: ['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256', 'ECDHE-ECDSA-AES256-GCM-SHA384'] },
    });
    assert.deepEqual(c, { profile: 'Custom', minVersion: 'TLSv1.1', ciphers: 'ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384' });
    assert.throws(() => tlsServerOptions({ type: 'Custom', custom: {} }), /custom\.ciphers: a Custom profile must list its ciphers/);
    assert.throws(
      () => tlsServerOptions({ type: 'Custom', custom: { ciphers: ['AES128-SHA'], minTLSVersion: 'VersionTLS14' } }),
      /custom\.minTLSVersion: unknown version "VersionTLS14"/,
    );
    assert.throws(
      () => tlsServerOptions({ type: 'Custom', custom: { ciphers: ['NOT-A-CIPHER'] } }),
      /custom\.ciphers: OpenSSL accepts none of NOT-A-CIPHER/,
    );
    assert.throws(() => tlsServerOptions({ type: 'Strict' }), /tlsSecurityProfile\.type: unknown profile "Strict"/);
  });
});
