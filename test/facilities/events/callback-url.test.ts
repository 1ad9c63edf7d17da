import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { addressAllowed, checkCallbackUrl, classifyAddress } from '../../../src/facilities/events/callback-url.ts'
import { recordResult } from '../../reliability-record.ts'

/** Every spelling of a non-public address the probe of issue 27 tried, with the class it must get. */
const REFUSED: ReadonlyArray<readonly [string, string]> = [
  ['127.0.0.1', 'loopback'], ['127.255.255.254', 'loopback'], ['::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'], ['::ffff:127.0.0.1', 'loopback'], ['::ffff:7f00:1', 'loopback'],
  ['::127.0.0.1', 'loopback'], ['::7f00:1', 'loopback'], ['64:ff9b::127.0.0.1', 'loopback'],
  ['0x7f.0.0.1', 'loopback'], ['2130706433', 'loopback'], ['0177.0.0.1', 'loopback'], ['[::1]', 'loopback'],
  ['10.0.0.1', 'private'], ['172.16.5.4', 'private'], ['192.168.1.1', 'private'], ['100.64.0.1', 'private'],
  ['fc00::1', 'private'], ['fd12:3456::1', 'private'], ['::ffff:10.0.0.1', 'private'], ['::10.0.0.1', 'private'],
  ['64:ff9b::a00:1', 'private'], ['fec0::1', 'private'],
  ['169.254.169.254', 'link-local'], ['fe80::1', 'link-local'], ['fe80::1%eth0', 'link-local'], ['::ffff:169.254.169.254', 'link-local'],
  // RFC 5737 documentation, the 6to4 relay, "this network", IETF protocol assignments, benchmarking.
  ['192.0.2.1', 'reserved'], ['192.0.2.2', 'reserved'], ['198.51.100.7', 'reserved'], ['203.0.113.9', 'reserved'],
  ['192.88.99.1', 'reserved'], ['0.0.0.0', 'reserved'], ['0.1.2.3', 'reserved'], ['192.0.0.8', 'reserved'],
  ['198.18.0.1', 'reserved'], ['224.0.0.1', 'reserved'], ['239.255.255.250', 'reserved'], ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'reserved'], ['::ffff:192.0.2.1', 'reserved'],
  ['::', 'reserved'], ['2001:db8::1', 'reserved'], ['3fff::1', 'reserved'], ['ff02::1', 'reserved'], ['100::1', 'reserved'],
  ['2002:7f00:1::1', 'reserved'], ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'], ['64:ff9b:1::a00:1', 'reserved'],
  ['::ffff:0:7f00:1', 'reserved'], ['::8.8.8.8', 'reserved'], ['4000::1', 'reserved'], ['not an address', 'reserved'],
]
const ALLOWED = ['8.8.8.8', '93.184.215.14', '1.1.1.1', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e', '::ffff:8.8.8.8', '64:ff9b::808:808', '64:ff9b::8.8.8.8']

describe('callback addresses: only globally routable unicast', () => {
  for (const [address, expected] of REFUSED) {
    it(`refuses ${address} as ${expected}`, () => {
      assert.equal(classifyAddress(address), expected)
      assert.equal(addressAllowed(address, false), false)
    })
  }
  for (const address of ALLOWED) {
    it(`allows ${address}`, () => {
      assert.equal(classifyAddress(address), 'public')
      assert.equal(addressAllowed(address, false), true)
    })
  }
  it('allows loopback in every spelling only when loopback is allowed, and nothing else non-public', () => {
    for (const [address, expected] of REFUSED) assert.equal(addressAllowed(address, true), expected === 'loopback', address)
    const refused = REFUSED.filter(([a]) => !addressAllowed(a, false)).length
    const allowed = ALLOWED.filter(a => addressAllowed(a, false)).length
    recordResult('address-classes', {
      test: 'Callback and webhook addresses (ipaddr.js with the IANA special-purpose ranges)',
      injected: 'spellings of loopback, private, link-local, documentation, benchmarking, multicast, reserved and transition addresses: IPv4 in dotted, hexadecimal, octal and integer form; IPv6 mapped, compatible, NAT64, 6to4, Teredo, zoned; and public ones',
      count: REFUSED.length + ALLOWED.length,
      result: `${refused} of ${REFUSED.length} non-public refused, ${allowed} of ${ALLOWED.length} public allowed (before: ::127.0.0.1, 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24 and 192.88.99.0/24 passed)`,
    })
  })
})

describe('checkCallbackUrl', () => {
  it('judges the host of a URL in any spelling the URL parser accepts', async () => {
    for (const url of ['http://[::127.0.0.1]/', 'http://[::ffff:7f00:1]/', 'http://0x7f000001/', 'http://192.0.2.2/', 'http://[64:ff9b::7f00:1]/x']) {
      const check = await checkCallbackUrl(url, false)
      assert.equal(check.ok, false, url)
      const reason = (check as { reason: { key: string, params: { kind?: string } } }).reason
      assert.equal(reason.key, 'ADDRESS_REFUSED', url)
      assert.match(reason.params.kind ?? '', /^(loopback|reserved)$/, url)
    }
    assert.deepEqual(await checkCallbackUrl('https://[2606:4700:4700::1111]/hook', false), { ok: true })
    assert.deepEqual(await checkCallbackUrl('https://8.8.8.8/hook', false), { ok: true })
  })
  it('says why with a message of the catalogue, which names no member (the field error does)', async () => {
    assert.deepEqual(await checkCallbackUrl('ftp://8.8.8.8/', false), { ok: false, reason: { key: 'URL_SCHEME', params: {} } })
    assert.deepEqual(await checkCallbackUrl('https://user:pw@8.8.8.8/', false), { ok: false, reason: { key: 'URL_CREDENTIALS', params: {} } })
  })
})
