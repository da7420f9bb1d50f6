import { describe, expect, it } from 'vitest';
import { checkTarget, isRefusedAddress } from '../../src/core/webhooks/ssrf-guard.js';

describe('the SSRF guard of webhook targets', () => {
  it('refuses loopback, private, CGNAT, link-local, unspecified and multicast addresses, also IPv4-mapped or NAT64', () => {
    for (const address of [
      '127.0.0.1', '127.255.0.9', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.0.1', '100.64.0.1', '100.127.255.254', '169.254.169.254',
      '0.0.0.0', '224.0.0.1', '255.255.255.255', '::', '::1', 'fc00::1', 'fd12:3456::1', 'fe80::1', 'ff02::1',
      '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:a9fe:a9fe', '64:ff9b::a00:1', 'not an address',
    ]) expect(isRefusedAddress(address), address).toBe(true);
  });

  it('lets public addresses through', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '198.51.100.7', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808']) {
      expect(isRefusedAddress(address), address).toBe(false);
    }
  });

  it('checks every address a name resolves to, and connects to a checked one', async () => {
    const resolveTo = (...addresses: string[]) => () => Promise.resolve(addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));
    // One private address among public ones is enough to refuse (a rebinding name).
    expect(await checkTarget('https://hooks.example/x', { allowPrivate: false, resolve: resolveTo('8.8.8.8', '10.0.0.1') })).toMatchObject({ ok: false });
    const ok = await checkTarget('https://hooks.example:8443/x?y=1', { allowPrivate: false, resolve: resolveTo('2606:4700::1', '8.8.8.8') });
    expect(ok).toMatchObject({ ok: true, target: { address: '2606:4700::1', family: 6 } });
    expect(await checkTarget('https://nowhere.example/', { allowPrivate: false, resolve: () => Promise.reject(new Error('ENOTFOUND')) }))
      .toEqual({ ok: false, problem: 'host nowhere.example could not be resolved' });
    expect(await checkTarget('http://127.0.0.1:9/', { allowPrivate: true })).toMatchObject({ ok: true, target: { address: '127.0.0.1', family: 4 } });
    expect(await checkTarget('file:///etc/passwd', { allowPrivate: true })).toMatchObject({ ok: false });
  });
});
