import assert from 'node:assert/strict'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'

type AddFormats = (ajv: Ajv2020) => Ajv2020
const addFormats = ((addFormatsModule as unknown as { default?: AddFormats }).default ?? addFormatsModule) as unknown as AddFormats

/** An answer's body as sent before content coding (br or gzip, when the request asked for it). */
export function decodedBody (res: LightMyRequestResponse): string {
  const coding = res.headers['content-encoding']
  if (coding === 'br') return brotliDecompressSync(res.rawPayload).toString('utf8')
  if (coding === 'gzip') return gunzipSync(res.rawPayload).toString('utf8')
  return res.body
}

interface Doc {
  paths: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, { schema?: object }> }> }>>
  components?: object
}

interface Compiled {
  doc: Doc
  ajv: Ajv2020
  routes: { pattern: RegExp, path: string }[]
  cache: Map<string, ValidateFunction | null>
}

const perApp = new WeakMap<FastifyInstance, Compiled>()

function compiled (app: FastifyInstance): Compiled {
  let c = perApp.get(app)
  if (!c) {
    const doc = JSON.parse(JSON.stringify(app.swagger())) as Doc
    const ajv = new Ajv2020({ strict: false, allErrors: true })
    addFormats(ajv)
    const routes = Object.keys(doc.paths).map(p => ({
      path: p,
      pattern: new RegExp('^' + p.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}/g, '[^/]+').replace(/\{[^}]+\}/g, '[^/]+') + '$'),
    }))
    c = { doc, ajv, routes, cache: new Map() }
    perApp.set(app, c)
  }
  return c
}

/** The documented path a request was served by: /v1/x is documented as /x; version 2 on /x (by Accept) as /v2/x. */
function documentedPath (url: string, servedVersion: string | undefined): string {
  const path = url.split('?')[0] ?? '/'
  if (path === '/v1') return '/'
  if (path.startsWith('/v1/')) return path.slice(3)
  if (!path.startsWith('/v2') && servedVersion === '2') return path === '/' ? '/v2' : `/v2${path}`
  return path
}

/**
 * Checks a response against the OpenAPI document of the same app: the route and status must be
 * documented, and a JSON body must match the schema documented for them.
 */
export function validateResponse (app: FastifyInstance, opts: InjectOptions, res: LightMyRequestResponse): void {
  const method = (opts.method ?? 'GET').toString().toLowerCase()
  const url = typeof opts.url === 'string' ? opts.url : String(opts.path ?? '/')
  if (method === 'head' || method === 'options') return
  const c = compiled(app)
  const path = documentedPath(url, res.headers['api-version'] as string | undefined)
  const route = c.routes.find(r => r.pattern.test(path))
  if (!route) return // Unknown paths (404, 405, redirects) have no operation to check against.
  const operation = c.doc.paths[route.path]?.[method]
  if (!operation) return
  const status = String(res.statusCode)
  if (res.statusCode === 308) return
  const response = operation.responses?.[status]
  assert.ok(response, `${method.toUpperCase()} ${route.path} answered ${status}, which the OpenAPI document does not list`)
  const contentType = String(res.headers['content-type'] ?? '')
  // JSON and +json types; not application/x-ndjson, a file of JSON lines.
  if (res.body === '' || !/^application\/(?:[\w.-]+\+)?json\b/.test(contentType)) return
  const key = `${method} ${route.path} ${status}`
  let validate = c.cache.get(key)
  if (validate === undefined) {
    const media = response.content ?? {}
    const schema = (media['application/problem+json'] ?? media['application/json'] ?? Object.values(media)[0])?.schema
    validate = schema ? c.ajv.compile({ ...schema, components: c.doc.components }) : null
    c.cache.set(key, validate)
  }
  if (validate === null) return
  const body: unknown = JSON.parse(decodedBody(res))
  assert.ok(validate(body), `${key}: body does not match the documented schema: ${JSON.stringify(validate.errors)}\n${res.body.slice(0, 500)}`)
}
