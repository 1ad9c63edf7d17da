import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'
import { type Message, message } from '../../messages.ts'

/** Where an address leads: only `public` ones may receive webhooks (loopback too, when allowed). */
export type AddressClass = 'public' | 'loopback' | 'private' | 'link-local' | 'reserved'

/**
 * ipaddr.js's names for the IANA special-purpose ranges (RFC 6890's registries for IPv4 and IPv6),
 * by the class this service reports. Anything special-purpose that is not loopback, private or
 * link-local is `reserved`: documentation (RFC 5737, RFC 3849), benchmarking, multicast,
 * broadcast, "this network", the 6to4 relay, AS112 and AMT anycast, ORCHID, discard, and the
 * transition prefixes whose embedded IPv4 address is not checked here (Teredo, 6to4, RFC 6145,
 * the local-use NAT64 prefix).
 */
const CLASS_OF_RANGE: Readonly<Record<string, AddressClass>> = {
  unicast: 'public',
  loopback: 'loopback',
  private: 'private',
  carrierGradeNat: 'private',
  uniqueLocal: 'private',
  linkLocal: 'link-local',
  deprecatedSiteLocal: 'private',
}

/** The well-known NAT64 prefix (RFC 6052 §2.1): the gateway connects to the IPv4 address in its last 32 bits. */
const NAT64 = ipaddr.IPv6.parseCIDR('64:ff9b::/96')
/** IPv4-compatible IPv6 addresses (RFC 4291 §2.5.5.1, deprecated): ::a.b.c.d. */
const IPV4_COMPATIBLE = ipaddr.IPv6.parseCIDR('::/96')
/** Global unicast (RFC 4291 §2.5.4): the only IPv6 space IANA allocates to networks on the Internet. */
const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3')

/** The IPv4 address carried in the last 32 bits of an IPv6 address. */
function embeddedIPv4 (ip: ipaddr.IPv6): ipaddr.IPv4 {
  const bytes = ip.toByteArray()
  return new ipaddr.IPv4(bytes.slice(12))
}

function classifyIPv4 (ip: ipaddr.IPv4): AddressClass {
  return CLASS_OF_RANGE[ip.range()] ?? 'reserved'
}

function classifyIPv6 (ip: ipaddr.IPv6): AddressClass {
  if (ip.isIPv4MappedAddress()) return classifyIPv4(ip.toIPv4Address())
  if (ip.match(NAT64)) return classifyIPv4(embeddedIPv4(ip))
  const range = ip.range()
  if (range === 'loopback') return 'loopback'
  if (range === 'unspecified') return 'reserved'
  if (ip.match(IPV4_COMPATIBLE)) {
    // Deprecated and never routed; stacks that still honour it reach the IPv4 address, so say what that is.
    const inner = classifyIPv4(embeddedIPv4(ip))
    return inner === 'public' ? 'reserved' : inner
  }
  const c = CLASS_OF_RANGE[range] ?? 'reserved'
  return c === 'public' && !ip.match(GLOBAL_UNICAST) ? 'reserved' : c
}

/**
 * An IPv6 address in its canonical hexadecimal spelling, by the WHATWG URL parser: ipaddr.js
 * reads a dotted tail (`::8.8.8.8`) as IPv4-mapped, which it is not.
 */
function parseIPv6 (text: string): ipaddr.IPv6 {
  return ipaddr.IPv6.parse(new URL(`http://[${text}]/`).hostname.slice(1, -1))
}

/**
 * The class of an IP address in any form (dotted, hexadecimal or octal IPv4; every IPv6
 * notation, with or without brackets or a zone). Every IPv6 form that reaches an IPv4 address
 * (mapped, compatible, well-known NAT64) is judged by that address; a zoned one (`fe80::1%eth0`)
 * means a link of this host. Not an address: `reserved`.
 */
export function classifyAddress (address: string): AddressClass {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address
  try {
    if (!bare.includes(':')) return classifyIPv4(ipaddr.IPv4.parse(bare))
    const zone = bare.indexOf('%')
    if (zone !== -1) {
      parseIPv6(bare.slice(0, zone))
      return 'link-local'
    }
    return classifyIPv6(parseIPv6(bare))
  } catch {
    return 'reserved'
  }
}

/** Whether a webhook may be sent to this address (no server-side request forgery): globally routable unicast only. */
export function addressAllowed (address: string, allowLoopback: boolean): boolean {
  const c = classifyAddress(address)
  return c === 'public' || (c === 'loopback' && allowLoopback)
}

export const CALLBACK_URL_MAX = 2048

export type CallbackCheck = { readonly ok: true } | { readonly ok: false, readonly reason: Message }

/**
 * The one check of a URL this service will send requests to (a callback_url, a webhook
 * subscription's url): http(s), no credentials, and a host that resolves only to addresses a
 * webhook may go to (addressAllowed). Checked when the URL is given, and again (per connection)
 * when it is delivered, because a name can resolve elsewhere by then (DNS rebinding). The reason
 * is a message of the catalogue (src/messages.ts), worded in the request's language; it names no
 * member, the field error does.
 *
 * @example
 * const check = await checkCallbackUrl(body.url, config.eventLog.webhookAllowLoopback)
 * if (!check.ok) throw validationFailed([fieldError('url', 'INVALID_VALUE', check.reason)])
 */
export async function checkCallbackUrl (raw: string, allowLoopback: boolean): Promise<CallbackCheck> {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return { ok: false, reason: message('URL') }
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, reason: message('URL_SCHEME') }
  if (url.username !== '' || url.password !== '') return { ok: false, reason: message('URL_CREDENTIALS') }
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  let addresses: string[]
  if (isIP(host) !== 0) {
    addresses = [host]
  } else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map(a => a.address)
    } catch {
      return { ok: false, reason: message('HOST_UNRESOLVED', { host }) }
    }
  }
  const refused = addresses.find(a => !addressAllowed(a, allowLoopback))
  if (refused !== undefined) {
    return { ok: false, reason: message('ADDRESS_REFUSED', { address: refused, kind: classifyAddress(refused) as Exclude<AddressClass, 'public'> }) }
  }
  return { ok: true }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void

/**
 * A connection's own name resolution (`lookup` of http.request), refusing addresses a webhook may
 * not reach (addressAllowed). Checking here, on the addresses the socket will use, closes the gap
 * a check before sending leaves (DNS rebinding). An IP literal is connected to without a lookup:
 * its caller checks it (addressAllowed).
 */
export function guardedLookup (allowLoopback: boolean) {
  return (hostname: string, options: { all?: boolean, family?: number }, callback: LookupCallback): void => {
    dnsLookup(hostname, { family: options.family ?? 0, all: true }, (err, addresses) => {
      if (err) return callback(err, [])
      const refused = addresses.find(a => !addressAllowed(a.address, allowLoopback))
      if (refused !== undefined || addresses.length === 0) {
        const e = new Error(`${hostname} resolves to ${refused?.address ?? 'nothing'}, a ${refused ? classifyAddress(refused.address) : 'missing'} address`) as NodeJS.ErrnoException
        e.code = 'EADDRNOTALLOWED'
        return callback(e, [])
      }
      if (options.all === true) callback(null, addresses)
      else callback(null, addresses[0]!.address, addresses[0]!.family)
    })
  }
}
