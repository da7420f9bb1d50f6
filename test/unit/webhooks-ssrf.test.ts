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
    for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '198.51.100.7', '203.0.113.9', '192.88.100.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808']) {
      expect(isRefusedAddress(address), address).toBe(false);
    }
  });

  // Forms of IPv6 that carry an IPv4 address are judged as that address; the rest of IPv6 must be global unicast.
  it('decodes the IPv4 address embedded in IPv6 forms and refuses it when it is not public', () => {
    const cases: [string, boolean][] = [
      // IPv4-translated (SIIT) ::ffff:0:a.b.c.d
      ['::ffff:0:127.0.0.1', true], ['::ffff:0:7f00:1', true], ['::ffff:0:10.1.2.3', true], ['::ffff:0:8.8.8.8', false],
      // 6to4 2002:AABB:CCDD::/48
      ['2002:7f00:1::1', true], ['2002:a00:1::', true], ['2002:a9fe:a9fe::1', true], ['2002:808:808::1', false],
      // NAT64, the well-known prefix
      ['64:ff9b::127.0.0.1', true], ['64:ff9b::192.168.1.1', true], ['64:ff9b::1.1.1.1', false],
      // IPv4-mapped, also written in hexadecimal or with leading zeros
      ['::ffff:169.254.169.254', true], ['0:0:0:0:0:ffff:7f00:0001', true], ['::ffff:1.1.1.1', false],
    ];
    for (const [address, refused] of cases) expect(isRefusedAddress(address), address).toBe(refused);
  });

  it('refuses IPv6 outside global unicast and its special-purpose blocks, whatever IPv4 they look like they hold', () => {
    for (const address of [
      '64:ff9b:1::7f00:1', '64:ff9b:1::808:808', // local-use NAT64: the translator is someone's private network
      '2001::7f00:1', '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo (its addresses hide a NAT's)
      '2001:2::1', '2001:10::1', // benchmarking, ORCHID (IETF protocol assignments)
      '100::1', '100::ffff:7f00:1', // discard-only
      '2001:db8::1', '2001:db8::8.8.8.8', '3fff::1', // documentation
      '::127.0.0.1', '::8.8.8.8', // the deprecated IPv4-compatible form
      '4000::1', 'e000::1', // unassigned outside 2000::/3
      'fe80::1%eth0', '::ffff:1.2.3', '1:2:3:4:5:6:7:8:9',
    ]) expect(isRefusedAddress(address), address).toBe(true);
    for (const address of ['2001:4860:4860::8888', '2606:4700:4700::1111', '2a00:1450:4001::200e', '2001:200::1', '3ffe::1']) {
      expect(isRefusedAddress(address), address).toBe(false);
    }
  });

  it('refuses the 6to4 relay anycast range, however written', () => {
    for (const address of ['192.88.99.1', '192.88.99.255', '::ffff:192.88.99.1', '2002:c058:6301::1']) expect(isRefusedAddress(address), address).toBe(true);
  });

  it('applies the same to literal hosts in URLs', async () => {
    for (const url of ['http://[::ffff:0:127.0.0.1]:8080/', 'http://[2002:7f00:1::]/', 'http://[64:ff9b:1::a00:1]/', 'http://[2001::1]/', 'http://[100::1]/', 'http://[2001:db8::1]/', 'http://192.88.99.1/']) {
      expect(await checkTarget(url, { allowPrivate: false }), url).toMatchObject({ ok: false });
    }
    expect(await checkTarget('http://[2002:808:808::1]/', { allowPrivate: false })).toMatchObject({ ok: true, target: { address: '2002:808:808::1', family: 6 } });
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
