import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../errors.ts'

export const JSON_BODY_TYPES = ['application/json', 'application/vnd.blog.v1+json', 'application/vnd.blog.v2+json'] as const
export const MERGE_PATCH = 'application/merge-patch+json'
export const JSON_PATCH = 'application/json-patch+json'
export const PATCH_TYPES = [MERGE_PATCH, JSON_PATCH] as const

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Media types this route accepts for its request body (default: JSON and the vendor types). */
    bodyTypes?: readonly string[]
  }
}

function essence (contentType: string): { type: string, charset: string | null } {
  const [type = '', ...params] = contentType.split(';').map(s => s.trim())
  let charset: string | null = null
  for (const p of params) {
    const [k, v] = p.split('=').map(s => s.trim())
    if (k?.toLowerCase() === 'charset') charset = (v ?? '').replace(/^"|"$/g, '').toLowerCase()
  }
  return { type: type.toLowerCase(), charset }
}

/**
 * Request bodies are JSON only (contract §4): the framework's text/plain parser is removed, one
 * JSON parser (rejecting `__proto__` and `constructor.prototype`) serves every JSON media type,
 * and each route's `bodyTypes` is enforced before the body is read, so the answer is 415, not 400.
 */
export const contentTypePlugin = fp(async function contentType (app: FastifyInstance) {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser([...JSON_BODY_TYPES, ...PATCH_TYPES], { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'))

  app.addHook('preParsing', async (req, _reply, payload) => {
    const header = req.headers['content-type']
    const length = req.headers['content-length']
    const hasBody = header !== undefined || (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined
    if (!hasBody || req.method === 'GET' || req.method === 'HEAD') return payload
    const allowed = req.routeOptions.config.bodyTypes ?? JSON_BODY_TYPES
    const { type, charset } = essence(header ?? '')
    if (!allowed.includes(type) || (charset !== null && charset !== 'utf-8' && charset !== 'utf8')) {
      const isPatch = allowed.some(t => (PATCH_TYPES as readonly string[]).includes(t))
      const sent = header === undefined ? 'no Content-Type' : `"${header}"`
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', `This endpoint takes ${allowed.join(' or ')} (UTF-8); the request sent ${sent}.`, {
        headers: isPatch ? { 'accept-patch': allowed.join(', ') } : {},
      })
    }
    return payload
  })
}, { name: 'content-type' })
