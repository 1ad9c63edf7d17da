import { lookup } from 'node:dns/promises'
import { BlockList, isIP } from 'node:net'

/** Where an address leads: only `public` ones may receive webhooks (loopback too, when allowed). */
export type AddressClass = 'public' | 'loopback' | 'private' | 'link-local' | 'reserved'

function blockList (ranges: readonly (readonly [string, number, 'ipv4' | 'ipv6'])[]): BlockList {
  const list = new BlockList()
  for (const [net, prefix, type] of ranges) list.addSubnet(net, prefix, type)
  return list
}

const LOOPBACK = blockList([['127.0.0.0', 8, 'ipv4'], ['::1', 128, 'ipv6']])
const LINK_LOCAL = blockList([['169.254.0.0', 16, 'ipv4'], ['fe80::', 10, 'ipv6']])
// RFC 1918, carrier-grade NAT (RFC 6598), unique local IPv6 (RFC 4193).
const PRIVATE = blockList([['10.0.0.0', 8, 'ipv4'], ['172.16.0.0', 12, 'ipv4'], ['192.168.0.0', 16, 'ipv4'], ['100.64.0.0', 10, 'ipv4'], ['fc00::', 7, 'ipv6']])
// "This network", IETF protocol assignments, benchmarking, multicast, reserved, unspecified (RFC 6890).
const RESERVED = blockList([
  ['0.0.0.0', 8, 'ipv4'], ['192.0.0.0', 24, 'ipv4'], ['198.18.0.0', 15, 'ipv4'], ['224.0.0.0', 4, 'ipv4'], ['240.0.0.0', 4, 'ipv4'],
  ['::', 128, 'ipv6'], ['ff00::', 8, 'ipv6'], ['64:ff9b::', 96, 'ipv6'], ['2001:db8::', 32, 'ipv6'],
])

/** The class of an IP address; an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) is judged by its IPv4 part. */
export function classifyAddress (address: string): AddressClass {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  const ip = mapped ? mapped[1]! : address
  const type = isIP(ip) === 6 ? 'ipv6' : 'ipv4'
  if (LOOPBACK.check(ip, type)) return 'loopback'
  if (LINK_LOCAL.check(ip, type)) return 'link-local'
  if (PRIVATE.check(ip, type)) return 'private'
  if (RESERVED.check(ip, type)) return 'reserved'
  return 'public'
}

/** Whether a webhook may be sent to this address (no server-side request forgery). */
export function addressAllowed (address: string, allowLoopback: boolean): boolean {
  const c = classifyAddress(address)
  return c === 'public' || (c === 'loopback' && allowLoopback)
}

export const CALLBACK_URL_MAX = 2048

export type CallbackCheck = { readonly ok: true } | { readonly ok: false, readonly reason: string }

/**
 * A callback URL is http(s), carries no credentials, and its host resolves only to addresses a
 * webhook may go to; `field` names the member in the reason (export callbacks and webhook
 * subscriptions share this one check). Checked when the job is made, and again (per connection) when it is delivered,
 * because a name can resolve elsewhere by then (DNS rebinding).
 */
export async function checkCallbackUrl (raw: string, allowLoopback: boolean, field = 'callback_url'): Promise<CallbackCheck> {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return { ok: false, reason: `${field} is not an absolute URL.` }
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, reason: `${field} must use http or https.` }
  if (url.username !== '' || url.password !== '') return { ok: false, reason: `${field} must not carry a user name or password.` }
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  let addresses: string[]
  if (isIP(host) !== 0) {
    addresses = [host]
  } else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map(a => a.address)
    } catch {
      return { ok: false, reason: `${field}'s host "${host}" does not resolve.` }
    }
  }
  const refused = addresses.find(a => !addressAllowed(a, allowLoopback))
  if (refused !== undefined) {
    return { ok: false, reason: `${field}'s host resolves to ${refused}, a ${classifyAddress(refused)} address; webhooks go only to public addresses.` }
  }
  return { ok: true }
}
