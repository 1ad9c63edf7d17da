import type { IncomingMessage } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Clock } from '../../clock.ts'
import type { Config, VersionDates } from '../../config.ts'
import { AppError } from '../../errors.ts'
import { appendLink } from './links.ts'
import { routeOf } from './route.ts'

/**
 * Every version of the API, oldest first, with the date it was introduced and what it changes:
 * adding a version is one entry here (and its rows in docs/configuration.md: API_VN_DEPRECATED_AT, API_VN_SUNSET_AT).
 * Deprecation and sunset dates come from the settings (src/config.ts reads them for each version).
 */
const VERSIONS = [
  { version: 1, introduced: '2026-01-01T00:00:00Z', changes: 'names every identifier `id`.' },
  { version: 2, introduced: '2026-11-01T00:00:00Z', changes: 'names each identifier `<thing>Id` (`%example%` for a %thing%) and adds `_links`.' },
] as const

export type ApiVersion = typeof VERSIONS[number]['version']
export const API_VERSIONS: readonly ApiVersion[] = VERSIONS.map(v => v.version)
/** The version an unprefixed path without a vendor media type is served in. */
export const DEFAULT_VERSION: ApiVersion = VERSIONS[0].version

/**
 * The name of a representation's identifier in `version`: `id` in version 1,
 * `<thing>Id` from version 2 on (`ticket` → `ticketId`).
 */
export function idNameOf (version: ApiVersion, thing: string): string {
  return version === DEFAULT_VERSION ? 'id' : `${thing}Id`
}

/**
 * What each version changes, for the API's description (src/routes/system/docs-routes.ts), its
 * example identifier named after `thing`, one of the API's own resources (`thing` → `thingId`).
 */
export function versionChanges (thing: string): { version: ApiVersion, changes: string }[] {
  return VERSIONS.map(({ version, changes }) => ({ version, changes: changes.replace('%example%', idNameOf(version, thing)).replace('%thing%', thing) }))
}

export const JSON_MEDIA_TYPE = 'application/json; charset=utf-8'

export function vendorMediaType (v: ApiVersion): string {
  return `application/vnd.blog.v${v}+json`
}

/** What the request asked for: a version and the media type to answer with, or why it cannot be served. */
export type Negotiation =
  | { readonly ok: true, readonly version: ApiVersion, readonly mediaType: string }
  | { readonly ok: false, readonly reason: string }

const PATH_VERSION = /^\/v(\d+)(?=\/|$|\?)/
const VENDOR = /^application\/vnd\.blog\.v(\d+)\+json$/

/** `/v2` for `/v2/things?…`, '' for an unprefixed path. */
export function pathVersionPrefix (url: string): string {
  return PATH_VERSION.exec(url)?.[0] ?? ''
}

/** Where a response's links point: under the request's version prefix when it came by path. */
export function linkBase (req: { url: string }): string {
  return pathVersionPrefix(req.url)
}

/** The version a vendor media type names (`application/vnd.blog.v2+json` → 2), or null. */
export function vendorVersion (mediaType: string): number | null {
  const m = VENDOR.exec(mediaType)
  return m ? Number(m[1]) : null
}

/** The problem for a request no version can serve (path and Accept disagree, unknown version, no JSON). */
export function notAcceptable (n: Negotiation & { ok: false }): AppError {
  const detail = n.reason === 'version-conflict'
    ? 'The version in the path and the version in Accept disagree.'
    : n.reason === 'unknown-version' ? `The API version asked for in Accept does not exist. Versions: ${API_VERSIONS.join(', ')}.` : undefined
  return new AppError('NOT_ACCEPTABLE', detail)
}

interface Candidate { version: ApiVersion | null, vendor: boolean, q: number, order: number }

/**
 * The version comes from the path (`/v2/…`) or the vendor media type in Accept;
 * neither → 1; both disagreeing → 406; an unknown version in Accept → 406.
 */
export function negotiate (url: string, accept: string | undefined): Negotiation {
  const pathMatch = PATH_VERSION.exec(url)
  const pathVersion = pathMatch ? Number(pathMatch[1]) : null
  if (pathVersion !== null && !API_VERSIONS.includes(pathVersion as ApiVersion)) {
    return { ok: false, reason: 'unknown-path-version' }
  }
  const candidates: Candidate[] = []
  let unknownVendor = false
  // Plain JSON takes its q from the most specific range that matches it (RFC 9110 §12.5.1):
  // `application/json;q=0, */*;q=0.1` refuses it even though */* would match.
  let json: { q: number, order: number, specificity: number } | null = null
  let wildcard: { q: number, order: number } | null = null
  const ranges = accept === undefined || accept.trim() === '' ? ['*/*'] : accept.split(',')
  for (const [order, range] of ranges.entries()) {
    const [type = '', ...params] = range.split(';').map(s => s.trim())
    const mt = type.toLowerCase()
    let q = 1
    for (const p of params) {
      const [k, v] = p.split('=').map(s => s.trim())
      if (k?.toLowerCase() === 'q') q = Number(v)
    }
    if (Number.isNaN(q)) continue
    const vendor = VENDOR.exec(mt)
    if (vendor) {
      const v = Number(vendor[1])
      if (!(q > 0)) continue
      if (API_VERSIONS.includes(v as ApiVersion)) candidates.push({ version: v as ApiVersion, vendor: true, q, order })
      else unknownVendor = true
      continue
    }
    // application/x-ndjson: a file of rows, one per line; text/event-stream: a change stream.
    // The version then comes from the path or is 1.
    const specificity = mt === 'application/json' || mt === 'application/x-ndjson' || mt === 'text/event-stream' ? 3 : mt === 'application/*' ? 2 : mt === '*/*' ? 1 : 0
    if (specificity === 0) continue
    if (json === null || specificity > json.specificity) json = { q, order, specificity }
    if (specificity < 3 && q > 0 && (wildcard === null || q > wildcard.q)) wildcard = { q, order }
  }
  if (json !== null && json.q > 0) candidates.push({ version: null, vendor: false, q: json.q, order: json.order })
  // Plain JSON refused, but a wildcard accepts the vendor type of the version asked for (or the default).
  if (json !== null && !(json.q > 0) && wildcard !== null) candidates.push({ version: (pathVersion ?? DEFAULT_VERSION) as ApiVersion, vendor: true, q: wildcard.q, order: wildcard.order })
  const usable = pathVersion === null ? candidates : candidates.filter(c => c.version === null || c.version === pathVersion)
  if (usable.length === 0) {
    if (candidates.length > 0) return { ok: false, reason: 'version-conflict' }
    return { ok: false, reason: unknownVendor ? 'unknown-version' : 'not-acceptable' }
  }
  // Highest q wins; at equal q the more specific (vendor) type, then the first listed.
  usable.sort((a, b) => b.q - a.q || Number(b.vendor) - Number(a.vendor) || a.order - b.order)
  const best = usable[0]!
  const version = (pathVersion ?? best.version ?? DEFAULT_VERSION) as ApiVersion
  return { ok: true, version, mediaType: best.vendor ? vendorMediaType(version) : JSON_MEDIA_TYPE }
}

const NEGOTIATION = Symbol('negotiation')

/**
 * negotiate() depends on the path's version prefix and Accept alone, and clients send few
 * distinct Accept values: answers are kept per (prefix, Accept), up to a bound, beyond which
 * they are worked out each time.
 */
const negotiated = new Map<string, Map<string | undefined, Negotiation>>()
const MAX_NEGOTIATED = 256
let negotiatedCount = 0

function negotiateOnce (url: string, accept: string | undefined): Negotiation {
  // Only a version prefix in the path matters: `/v2/things/7` and `/v2/things` share an answer.
  const prefix = url.charCodeAt(1) === 118 /* v */ ? pathVersionPrefix(url) : ''
  let byAccept = negotiated.get(prefix)
  let answer = byAccept?.get(accept)
  if (answer !== undefined) return answer
  answer = negotiate(url, accept)
  if (negotiatedCount < MAX_NEGOTIATED && (accept === undefined || accept.length <= 200)) {
    if (byAccept === undefined) negotiated.set(prefix, byAccept = new Map())
    byAccept.set(accept, answer)
    negotiatedCount++
  }
  return answer
}

/** Negotiates once per request; the router and the hooks share the answer. */
export function negotiationOf (raw: IncomingMessage): Negotiation {
  const holder = raw as IncomingMessage & { [NEGOTIATION]?: Negotiation }
  holder[NEGOTIATION] ??= negotiateOnce(raw.url ?? '/', raw.headers.accept)
  return holder[NEGOTIATION]
}

/**
 * A router constraint: each versioned route is registered once per version, and the router picks
 * the one the request negotiated. A request no version can serve matches none (→ 406, see routing).
 */
export const apiVersionConstraint = {
  name: 'apiVersion',
  storage () {
    const handlers = new Map<string, never>()
    return {
      get: (v: string) => handlers.get(v) ?? null,
      set: (v: string, store: never) => { handlers.set(v, store) },
    }
  },
  deriveConstraint (req: IncomingMessage) {
    const n = negotiationOf(req)
    return n.ok ? String(n.version) : 'none'
  },
  mustMatchWhenDerived: false,
  validate (value: unknown) {
    if (typeof value !== 'string') throw new Error('apiVersion must be a string')
  },
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The API version serving this request (1 when the route is not versioned). */
    apiVersion: ApiVersion
    /** Content-Type for a successful JSON response. */
    responseMediaType: string
  }
  interface FastifyContextConfig {
    /** The API version a versioned route was registered for. */
    apiVersion?: ApiVersion
    /** The route describes the versions (the index, /versions): it answers even after a sunset. */
    describesVersions?: boolean
  }
}

function httpDate (d: Date): string {
  return d.toUTCString()
}

/** The `versions` list of GET /versions. */
export function versionsOf (config: Pick<Config, 'versions'>) {
  const dates = datesOf(config)
  return VERSIONS.map(({ version, introduced }) => ({
    version,
    introduced,
    deprecated: dates[version].deprecatedAt?.toISOString() ?? null,
    sunset: dates[version].sunsetAt?.toISOString() ?? null,
  }))
}

const NO_DATES: VersionDates = Object.freeze({ deprecatedAt: null, sunsetAt: null })

/** Each version's deprecation and sunset dates from the settings (none when they do not say). */
function datesOf (config: Pick<Config, 'versions'>): Record<ApiVersion, VersionDates> {
  return Object.fromEntries(API_VERSIONS.map(v => [v, config.versions[v] ?? NO_DATES])) as Record<ApiVersion, VersionDates>
}

/**
 * Sets `API-Version` on a versioned route's response, and for a deprecated version `Deprecation`
 * (RFC 9745), `Sunset` (RFC 8594) and `Link rel="deprecation"`, from the settings' dates.
 */
export function versionHeadersOf (config: Pick<Config, 'versions'>): (reply: FastifyReply, version: ApiVersion) => void {
  const versionDates = datesOf(config)
  return function versionHeaders (reply: FastifyReply, version: ApiVersion): void {
    reply.header('api-version', String(version))
    const dates = versionDates[version]
    // RFC 9745 lets Deprecation name a future date, so the warning starts as soon as it is set.
    if (dates.deprecatedAt) {
      reply.header('deprecation', `@${Math.floor(dates.deprecatedAt.getTime() / 1000)}`)
      appendLink(reply, '</versions>; rel="deprecation"; type="application/json"')
      if (dates.sunsetAt) reply.header('sunset', httpDate(dates.sunsetAt))
    }
  }
}

/**
 * Per response of a versioned route: `API-Version`, the negotiated Content-Type, and for a
 * deprecated version `Deprecation` (RFC 9745), `Sunset` (RFC 8594) and `Link rel="deprecation"`;
 * after sunset, 410 VERSION_SUNSET.
 */
export const versioningPlugin = fp(async function versioning (app: FastifyInstance, opts: { config: Config, clock: Clock }) {
  app.decorateRequest('apiVersion', DEFAULT_VERSION)
  app.decorateRequest('responseMediaType', JSON_MEDIA_TYPE)
  const versionDates = datesOf(opts.config)
  const clock = opts.clock
  const versionHeaders = versionHeadersOf(opts.config)

  app.addHook('onRequest', (req: FastifyRequest, reply, done) => {
    const version = routeOf(req).config.apiVersion
    if (version === undefined) {
      done()
      return
    }
    const n = negotiationOf(req.raw)
    req.apiVersion = version
    req.responseMediaType = n.ok ? n.mediaType : JSON_MEDIA_TYPE
    versionHeaders(reply, version)
    const sunset = versionDates[version].sunsetAt
    // The index and /versions stay up after a sunset: they are where clients learn what to use instead.
    if (sunset && sunset.getTime() <= clock.now().getTime() && routeOf(req).config.describesVersions !== true) {
      done(new AppError('VERSION_SUNSET', `Version ${version} of the API was retired on ${sunset.toISOString()}.`))
      return
    }
    done()
  })
}, { name: 'versioning' })

/** The core's paths that are the same in every version (`*`: any rest of the path). */
const CORE_UNVERSIONED_PATHS = ['/healthz', '/readyz', '/openapi.json', '/docs', '/docs/*', '/problems/*']

/**
 * Fastify's `rewriteUrl`: maps a version-prefixed alias of an unversioned path onto that path.
 * /v1/healthz, /v2/openapi.json, …: every path answers under a version prefix; the
 * core's and `paths` (those resources declare, `Resource.unversionedPaths`) are the same for every
 * version, so the prefix is dropped before routing.
 */
export function unversionedAliases (paths: readonly string[]): (req: IncomingMessage) => string {
  const alternatives = [...CORE_UNVERSIONED_PATHS, ...paths].map(p => p.slice(1).split('*').map(s => s.replace(/[.+?^${}()|[\]\\/]/g, '\\$&')).join('.*'))
  const alias = new RegExp(`^\\/v(?:${API_VERSIONS.join('|')})(\\/(?:${alternatives.join('|')}))$`)
  return req => {
    const url = req.url ?? '/'
    const q = url.indexOf('?')
    const path = q === -1 ? url : url.slice(0, q)
    const m = alias.exec(path)
    return m ? m[1]! + (q === -1 ? '' : url.slice(q)) : url
  }
}
