import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { routeOf } from '../protocol/route.ts'

/**
 * Who may cache a representation: anyone when read anonymously (published content), nobody but
 * the client, or anyone whoever asked (`everyone`: the same bytes for every caller, as a feed).
 */
export type Audience = 'public' | 'private' | 'everyone'

export const PUBLIC_CACHE = 'public, max-age=60, stale-while-revalidate=300'
export const PRIVATE_CACHE = 'private, no-store'

/**
 * What everyone may read (audience `public`), read anonymously, may be cached by
 * anyone; anything read with credentials, or only its owner may see, may not be stored at all.
 */
export function cacheControlFor (req: FastifyRequest, audience: Audience): string {
  if (audience === 'everyone') return PUBLIC_CACHE
  return audience === 'public' && req.headers.authorization === undefined ? PUBLIC_CACHE : PRIVATE_CACHE
}

/** Adds field names to `Vary`, keeping those already there. */
export function appendVary (reply: FastifyReply, ...fields: string[]): void {
  const current = String(reply.getHeader('vary') ?? '')
  const have = current.split(',').map(s => s.trim()).filter(Boolean)
  const lower = new Set(have.map(s => s.toLowerCase()))
  for (const f of fields) if (!lower.has(f.toLowerCase())) have.push(f)
  if (have.length > 0) reply.header('vary', have.join(', '))
}

/** Every versioned response's body depends on Accept (version, media type), Accept-Encoding and Authorization (visibility). */
export const cachingPlugin = fp(async function caching (app: FastifyInstance) {
  app.addHook('onSend', (req, reply, payload, done) => {
    // Lower case 'accept-encoding': @fastify/compress adds it again unless it finds it spelled so.
    if (routeOf(req).config.apiVersion !== undefined) appendVary(reply, 'Accept', 'accept-encoding', 'Authorization')
    if (reply.statusCode >= 400) appendVary(reply, 'Accept-Language')
    done(null, payload)
  })
}, { name: 'caching' })
