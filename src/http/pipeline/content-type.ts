import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { AppError, fieldError, validationFailed } from '../../errors.ts'
import { message } from '../../messages.ts'
import { routeOf } from '../protocol/route.ts'
import { API_VERSIONS, vendorMediaType, vendorVersion } from '../protocol/versioning.ts'

/** Request bodies: JSON, or the vendor type of a version. */
export const JSON_BODY_TYPES: readonly string[] = ['application/json', ...API_VERSIONS.map(vendorMediaType)]
export const MERGE_PATCH = 'application/merge-patch+json'
export const JSON_PATCH = 'application/json-patch+json'
export const PATCH_TYPES = [MERGE_PATCH, JSON_PATCH] as const

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Media types this route accepts for its request body (default: JSON and the vendor types). */
    bodyTypes?: readonly string[]
    /** The body may be left out (an action that takes no input): it is then `{}`, and validated as such. */
    optionalBody?: boolean
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

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })

/** Deeper documents are refused: nothing the service accepts nests beyond a few levels. */
export const MAX_JSON_DEPTH = 64
/** Longer arrays are refused before validation: none the service takes has more than 100 entries. */
export const MAX_JSON_ARRAY = 1000

type DocumentCheck = { problem: 'ok' } | { problem: 'ill-formed' | 'too-deep' } | { problem: 'nul' | 'too-long', field: string }

/** A JSON Pointer-like path without the leading slash (RFC 6901 escapes), as `errors[].field` names it. */
function pointer (parent: string, key: string): string {
  const segment = key.replaceAll('~', '~0').replaceAll('/', '~1').replaceAll('\u0000', '\\u0000')
  return parent === '' ? segment : `${parent}/${segment}`
}

/**
 * Walks `value` without recursion (a deep document must not exhaust the stack): every string and
 * member name must be well-formed Unicode without NUL, and nesting at most MAX_JSON_DEPTH levels.
 * NUL is refused for every store alike: PostgreSQL text cannot hold it (SQLite can), so accepting
 * it would make the same request succeed on one store and fail on the other.
 */
function checkDocument (value: unknown): DocumentCheck {
  const stack: [unknown, number, string][] = [[value, 0, '']]
  while (stack.length > 0) {
    const [v, depth, path] = stack.pop()!
    if (typeof v === 'string') {
      if (!v.isWellFormed()) return { problem: 'ill-formed' }
      if (v.includes('\u0000')) return { problem: 'nul', field: path }
    } else if (v !== null && typeof v === 'object') {
      if (depth >= MAX_JSON_DEPTH) return { problem: 'too-deep' }
      // Validating a huge array of bad entries would hold the event loop for seconds.
      if (Array.isArray(v) && v.length > MAX_JSON_ARRAY) return { problem: 'too-long', field: path }
      for (const [k, child] of Object.entries(v)) {
        if (!k.isWellFormed()) return { problem: 'ill-formed' }
        const childPath = pointer(path, k)
        if (k.includes('\u0000')) return { problem: 'nul', field: childPath }
        stack.push([child, depth + 1, childPath])
      }
    }
  }
  return { problem: 'ok' }
}

/**
 * Parses a JSON body with I-JSON's encoding rules (RFC 7493): UTF-8 only, no unpaired surrogates;
 * and at most MAX_JSON_DEPTH levels deep. Members named `__proto__` or `constructor` stay ordinary
 * own members (JSON.parse never touches prototypes), so validation reports them as unknown fields.
 * With duplicate member names the last one wins, as in JSON.parse. An empty body is no body
 * (`undefined`), which routes that need one report.
 */
export function parseJsonBody (raw: Buffer): unknown {
  let text: string
  try {
    text = utf8.decode(raw)
  } catch {
    throw new AppError('MALFORMED_JSON', 'The request body is not valid UTF-8.')
  }
  if (text.trim() === '') return undefined
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw new AppError('MALFORMED_JSON', `The request body is not valid JSON: ${(err as Error).message}.`)
  }
  const check = checkDocument(value)
  if (check.problem === 'too-long') {
    throw validationFailed([fieldError(check.field, 'TOO_LONG', message('MAX_ITEMS', { limit: MAX_JSON_ARRAY }))])
  }
  if (check.problem === 'nul') {
    throw validationFailed([fieldError(check.field, 'INVALID_FORMAT', message('NUL_CHARACTER'))])
  }
  if (check.problem === 'ill-formed') throw new AppError('MALFORMED_JSON', 'The request body has a string with an unpaired surrogate (\\uD800–\\uDFFF), which is not Unicode text.')
  if (check.problem === 'too-deep') throw new AppError('MALFORMED_JSON', `The request body nests deeper than ${MAX_JSON_DEPTH} levels.`)
  return value
}

/** Whether the request's framing says a body follows (a length above 0, or chunks). */
function carriesBody (headers: { 'content-length'?: string, 'transfer-encoding'?: string }): boolean {
  const length = headers['content-length']
  return (length !== undefined && length !== '0') || headers['transfer-encoding'] !== undefined
}

/** 415: what the endpoint `takes`, and what the request sent. */
function unsupported (header: string | undefined, takes: string, headers: Record<string, string> = {}): AppError {
  const sent = header === undefined ? 'no Content-Type' : `"${header}"`
  return new AppError('UNSUPPORTED_MEDIA_TYPE', `This endpoint takes ${takes}; the request sent ${sent}.`, { headers })
}

/**
 * Before a body is read: its type must be one the route takes (415 otherwise, with Accept-Patch
 * on patch routes), and a vendor type must name the version serving the request. Unknown routes
 * go on to 404/405; routes that take no body (GET, DELETE) were dealt with in onRequest.
 */
function checkBodyType (req: FastifyRequest): void {
  const route = routeOf(req)
  if (route.url === undefined || route.schema?.body === undefined) return
  const header = req.headers['content-type']
  const hasBody = header !== undefined || carriesBody(req.headers)
  const allowed = route.config.bodyTypes ?? JSON_BODY_TYPES
  const isPatch = allowed.some(t => (PATCH_TYPES as readonly string[]).includes(t))
  // A patch must say which format it is in, even when empty.
  if (!hasBody && !isPatch) return
  const { type, charset } = essence(header ?? '')
  const version = vendorVersion(type)
  const routeVersion = route.config.apiVersion
  const acceptPatch: Record<string, string> = isPatch ? { 'accept-patch': allowed.join(', ') } : {}
  if (version !== null && routeVersion !== undefined && version !== routeVersion) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `The body is declared as version ${version}, but version ${routeVersion} serves this request. Send application/json or application/vnd.blog.v${routeVersion}+json, or ask for version ${version} by path or Accept.`, { headers: acceptPatch })
  }
  if (!allowed.includes(type) || (charset !== null && charset !== 'utf-8' && charset !== 'utf8')) {
    throw unsupported(header, `${allowed.join(' or ')} (UTF-8)`, acceptPatch)
  }
}

/**
 * Request bodies are JSON only: the framework's text/plain parser is removed, one
 * strict JSON parser serves every JSON media type, and each route's `bodyTypes` is enforced before
 * the body is read, so the answer is 415, not 400. A vendor type names the version of the body:
 * it must be the version serving the request.
 */
export const contentTypePlugin = fp(async function contentType (app: FastifyInstance) {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser([...JSON_BODY_TYPES, ...PATCH_TYPES], { parseAs: 'buffer' }, (req, body, done) => {
    try {
      const value = parseJsonBody(body as Buffer)
      // A JSON Content-Type with nothing after it: a mistake where a body is expected, harmless elsewhere.
      if (value === undefined && routeOf(req).schema?.body !== undefined && routeOf(req).config.optionalBody !== true) {
        throw new AppError('MALFORMED_JSON', 'The request body is empty; send a JSON document.')
      }
      done(null, value)
    } catch (err) {
      done(err as Error, undefined)
    }
  })
  // Requests to unknown paths or with unknown methods must reach the not-found handler (404/405),
  // whatever their body; known routes have refused a wrong type in preParsing already.
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, _body, done) => { done(null, undefined) })

  // A route that takes no body (GET, DELETE) ignores a JSON one (a body must be JSON,
  // else 415) and body headers without a body. Fastify would refuse a malformed Content-Type
  // (`""`, `a;;;`) with its own 415 before any hook could say so: the header goes once checked.
  // Hooks with a callback, not async: they run on every request (a promise and a microtask each).
  app.addHook('onRequest', (req, _reply, done) => {
    const route = routeOf(req)
    if (route.url === undefined || route.schema?.body !== undefined) return done()
    const header = req.headers['content-type']
    if (carriesBody(req.headers) && !JSON_BODY_TYPES.includes(essence(header ?? '').type)) {
      done(unsupported(header, 'no body; a body, if sent, must be JSON (application/json or the vendor type)'))
      return
    }
    if (header !== undefined) delete req.headers['content-type']
    done()
  })

  app.addHook('preValidation', (req, _reply, done) => {
    if (req.body === undefined && routeOf(req).config.optionalBody === true) req.body = {}
    done()
  })

  app.addHook('preParsing', (req, _reply, payload, done) => {
    try {
      checkBodyType(req)
      done(null, payload)
    } catch (err) {
      done(err as Error)
    }
  })
}, { name: 'content-type' })
