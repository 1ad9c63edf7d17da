import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../../errors.ts'
import type { Catalogue } from '../../catalogue.ts'
import type { Config } from '../../config.ts'
import { sendProblem } from '../protocol/problems.ts'
import { negotiationOf, notAcceptable, pathVersionPrefix, versionHeadersOf } from '../protocol/versioning.ts'

interface PathEntry { pattern: RegExp, methods: Set<string>, acceptPatch: string | null, versioned: boolean, options: Record<string, string> }

function patternOf (url: string): RegExp {
  const body = url.split('/').map(seg => seg.startsWith(':') ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('/')
  return new RegExp(`^${body}$`)
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** PATCH formats a route accepts, announced by `Accept-Patch` on OPTIONS and 415. */
    acceptPatch?: readonly string[]
    /** Headers OPTIONS answers with on this route's path besides `Allow` (a protocol's own, such as tus's). */
    optionsHeaders?: Readonly<Record<string, string>>
  }
}

/**
 * What the router alone cannot say, from one table of every registered path:
 * OPTIONS → 204 with Allow (and the headers its routes add); a known path with another method → 405 with Allow;
 * a known path whose version cannot be served → 406; `/things/` → 308 to `/things`; else 404.
 */
export const routingPlugin = fp(async function routing (app: FastifyInstance, { catalogue, config }: { catalogue: Catalogue, config: Pick<Config, 'versions'> }) {
  const versionHeaders = versionHeadersOf(config)
  const table = new Map<string, PathEntry>()

  app.addHook('onRoute', route => {
    const url = route.url ?? route.path
    if (url === undefined || url.includes('*')) return
    const entry = table.get(url) ?? { pattern: patternOf(url), methods: new Set<string>(), acceptPatch: null, versioned: false, options: {} }
    if (route.config?.apiVersion !== undefined) entry.versioned = true
    for (const m of [route.method].flat()) entry.methods.add(m)
    // Per path: resources may accept different patch types.
    if (route.config?.acceptPatch) entry.acceptPatch = route.config.acceptPatch.join(', ')
    if (route.config?.optionsHeaders) Object.assign(entry.options, route.config.optionsHeaders)
    table.set(url, entry)
  })

  function lookup (path: string): PathEntry | undefined {
    for (const entry of table.values()) if (entry.pattern.test(path)) return entry
    return undefined
  }

  function allowOf (entry: PathEntry): string {
    return [...new Set([...entry.methods, 'OPTIONS'])].sort().join(', ')
  }

  /** Where `/things/` should go; `original` keeps a version prefix that an alias rewrite removed. */
  function canonicalRedirect (url: string, original: string = url): string | null {
    const q = url.indexOf('?')
    const path = q === -1 ? url : url.slice(0, q)
    if (path.length <= 1 || !path.endsWith('/')) return null
    const canonical = path.replace(/\/+$/, '') || '/'
    if (!lookup(canonical)) return null
    const prefix = original !== url ? pathVersionPrefix(original) : ''
    return prefix + canonical + (q === -1 ? '' : url.slice(q))
  }

  // Before routing matters: `/things/` would otherwise match `/things/:thing_id` with an empty id.
  // A callback hook: almost no request is redirected, and an async one costs every request a promise.
  app.addHook('onRequest', (req, reply, done) => {
    const location = canonicalRedirect(req.url, req.originalUrl)
    if (location === null) {
      done()
      return
    }
    // 308, not 301: the client repeats the same method and body at the new location.
    reply.code(308).header('location', location).header('cache-control', 'no-store').send()
  })

  app.setNotFoundHandler(function notFound (req, reply) {
    const path = req.url.split('?')[0] ?? '/'
    const entry = lookup(path)
    if (entry) {
      const allow = allowOf(entry)
      const n = negotiationOf(req.raw)
      // OPTIONS and 405 on a versioned path still say which version answered, and warn if it is deprecated.
      if (entry.versioned && n.ok) versionHeaders(reply, n.version)
      if (req.method === 'OPTIONS') {
        reply.header('allow', allow)
        if (entry.acceptPatch !== null) reply.header('accept-patch', entry.acceptPatch)
        return reply.code(204).headers(entry.options).send()
      }
      if (!entry.methods.has(req.method)) {
        return sendProblem(catalogue, req, reply, new AppError('METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${path}. Allowed: ${allow}.`, { headers: { allow } }))
      }
      if (!n.ok) return sendProblem(catalogue, req, reply, notAcceptable(n))
    }
    const location = canonicalRedirect(req.url, req.originalUrl)
    if (location !== null) return reply.code(308).header('location', location).header('cache-control', 'no-store').send()
    return sendProblem(catalogue, req, reply, new AppError('NOT_FOUND', `There is nothing at ${path}.`))
  })
}, { name: 'routing' })
