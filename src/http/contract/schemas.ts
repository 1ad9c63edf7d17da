import { type TObject, type TProperties, Type } from '@sinclair/typebox'
import type { Catalogue } from '../../catalogue.ts'
import { OPERATION_STATUSES, type OperationStatus } from '../../store/leased-rows.ts'
import { MAX_PAGE_SIZE } from '../toolkit/paging.ts'
import { PROBLEM_LIMITS } from '../protocol/problems.ts'
import { API_VERSIONS, idNameOf } from '../protocol/versioning.ts'

export const LinkSchema = Type.Object({
  href: Type.String({ maxLength: 8192, description: 'A root-relative path.' }),
  method: Type.Optional(Type.String({ maxLength: 16, description: 'The HTTP method; absent means GET.' })),
}, { $id: 'Link', additionalProperties: false })

/** An entry of a 422's `errors[]`, with the codes of the service's catalogue (the app builds it). */
export const fieldErrorSchema = (catalogue: Catalogue) => Type.Object({
  field: Type.String({ maxLength: PROBLEM_LIMITS.field, description: 'JSON Pointer-like path of the member (`items/0/quantity`), or the query parameter\'s name.' }),
  code: Type.Union(Object.keys(catalogue.fieldCodes).map(c => Type.Literal(c))),
  message: Type.String({ maxLength: PROBLEM_LIMITS.message }),
}, { $id: 'FieldError', additionalProperties: false })

/** The problem body, with the codes of the service's catalogue (the app builds it). */
export const problemSchema = (catalogue: Catalogue) => Type.Object({
  type: Type.String({ maxLength: 200, description: 'URI of a page describing the problem: `/problems/<code-in-kebab-case>`.' }),
  title: Type.String({ maxLength: 200 }),
  status: Type.Integer({ minimum: 400, maximum: 599, format: 'int32' }),
  detail: Type.String({ maxLength: PROBLEM_LIMITS.detail }),
  instance: Type.String({ maxLength: PROBLEM_LIMITS.instance, description: 'The path of the request.' }),
  code: Type.Union(Object.keys(catalogue.problems).map(c => Type.Literal(c)), { description: 'Stable code from the error catalogue.' }),
  errors: Type.Optional(Type.Array(Type.Ref('FieldError'), { maxItems: PROBLEM_LIMITS.errors, description: `One entry per violated constraint (422 only), at most ${PROBLEM_LIMITS.errors}.` })),
  trace_id: Type.String({ maxLength: 32, description: 'W3C trace-id of the request.' }),
  request_id: Type.String({ maxLength: 200, description: 'X-Request-Id of the request.' }),
}, { $id: 'Problem', additionalProperties: false, description: 'RFC 9457 problem details with the service\'s extension members.' })

/** The body of an action that takes no input (routes with `config.optionalBody`): none, or `{}`. */
/** A point in time, as every representation writes it (ISO 8601, UTC, milliseconds). */
export const TimestampSchema = Type.String({ format: 'date-time', maxLength: 30 })

/** A long operation's `status` (src/jobs/operation.ts). */
export const OperationStatusSchema = Type.Unsafe<OperationStatus>({ type: 'string', enum: [...OPERATION_STATUSES], description: '`pending` → `running` → `succeeded` or `failed`.' })

export const EmptyBodySchema = Type.Object({}, { additionalProperties: false, description: 'This action takes no input: send no body, or `{}`.' })

const STATUS_TEXT: Record<number, string> = {
  400: 'Malformed request (MALFORMED_JSON, INVALID_CURSOR, …)',
  401: 'No credential, or a bad one',
  403: 'The credential does not permit this',
  404: 'Not found',
  405: 'Method not allowed',
  406: 'Not acceptable',
  409: 'Conflict with the current state',
  410: 'API version retired',
  412: 'Precondition failed',
  413: 'Body over 1 MiB',
  414: 'Path and query over 8 KiB',
  415: 'Unsupported media type',
  416: 'Range not satisfiable (RANGE_NOT_SATISFIABLE); `Content-Range: bytes */<length>` gives the length',
  422: 'Invalid values (VALIDATION_FAILED with errors[])',
  429: 'Rate limited; see Retry-After',
  500: 'Internal error',
  503: 'Unavailable or timed out; see Retry-After',
}

/** Error responses of a route, all one shape: `application/problem+json`. */
export function problemResponses (...statuses: number[]): Record<number, unknown> {
  const out: Record<number, unknown> = {}
  for (const s of statuses) {
    out[s] = {
      description: STATUS_TEXT[s] ?? 'Error',
      content: { 'application/problem+json': { schema: Type.Ref('Problem') } },
    }
  }
  return out
}

/** Statuses any route can answer with. */
export const COMMON_ERRORS = [400, 401, 406, 410, 414, 429, 500, 503] as const

/** What any unversioned route can answer besides success: a bad URL or credential, rate limit, failure, overload. */
export const SYSTEM_ERRORS = [400, 401, 414, 429, 500, 503] as const

export const NotModifiedSchema = Type.Null({ description: 'Not modified: the copy named by If-None-Match / If-Modified-Since is current. No body.' })
export const NoContentSchema = Type.Null({ description: 'No content.' })

/**
 * A representation in every version, its identifier named as `idNameOf` says
 * (`thing`: `ticket` → `id`, `ticketId`); the rest is alike. `partial` makes every member optional
 * (list items with `fields`).
 */
export function versionedSchemas (name: string, thing: string, props: TProperties, opts: { partial?: boolean } = {}): [TObject, TObject] {
  const id = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, format: 'int64' })
  return API_VERSIONS.map(v => {
    const all = Type.Object({ [idNameOf(v, thing)]: id, ...props })
    return Type.Object((opts.partial ? Type.Partial(all) : all).properties, { $id: `${name}V${v}`, additionalProperties: false })
  }) as [TObject, TObject]
}

type Json = Record<string, unknown>
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)

const RATE_LIMIT_HEADERS = {
  RateLimit: {
    description: 'Quota left in the current window and seconds until it resets (IETF httpapi-ratelimit-headers): `"default";r=<left>;t=<seconds>`. On every response under a limit; probes (`/healthz`, `/readyz`) are never limited.',
    schema: { type: 'string', maxLength: 100 },
  },
  'RateLimit-Policy': {
    description: 'The policy: `"default";q=<RATE_LIMIT_MAX>;w=<RATE_LIMIT_WINDOW_S>`. Sent with `RateLimit`.',
    schema: { type: 'string', maxLength: 100 },
  },
}
const CORS_HEADERS = {
  'Access-Control-Allow-Origin': {
    description: 'Sent only when `CORS_ORIGINS` allows the request\'s `Origin`: that origin, or `*`. Absent otherwise: browsers on other origins cannot read the answer.',
    schema: { type: 'string', maxLength: 2048 },
  },
}
const RETRY_AFTER_HEADER = {
  'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer', format: 'int32', minimum: 0, maximum: 86_400 } },
}
const header = (description: string, schema: Json = { type: 'string', maxLength: 8192 }) => ({ description, schema })
/** What every conditional read, and every write's answer, says about its representation. */
const VALIDATOR_HEADERS = {
  ETag: header('The representation\'s entity tag (weak for lists): send it back in `If-None-Match` (304 when unchanged) or `If-Match` (412 when changed).', { type: 'string', maxLength: 100 }),
  'Cache-Control': header('`public, max-age=60, stale-while-revalidate=300` for what everyone may read, read without credentials; `private, no-store` otherwise.', { type: 'string', maxLength: 100 }),
}
const LAST_MODIFIED = { 'Last-Modified': header('When the resource last changed (HTTP date); `If-Modified-Since` and `If-Unmodified-Since` compare with it.', { type: 'string', maxLength: 40 }) }
const PAGE_HEADERS = {
  Link: header('Paging links (RFC 8288): `first`, `prev`, `next`, and with `page` also `last`; the body is a bare array.'),
  'X-Total-Count': header('Every matching item, with `Prefer: count=exact` only.', { type: 'integer', format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
}
const WRITE_HEADERS = {
  'Preference-Applied': header('The `Prefer` preference honoured: `return=minimal` (no body; a 200 becomes 204) or `return=representation`.', { type: 'string', maxLength: 100 }),
}
const REPLAY_HEADERS = {
  'Idempotent-Replayed': header('`true` when this answer is the stored answer to an earlier request with the same `Idempotency-Key`.', { type: 'string', enum: ['true'] }),
}
const LOCATION = { Location: header('The path of what was made.') }
const requestHeader = (name: string, description: string) => ({ name, in: 'header', required: false, description, schema: { type: 'string', maxLength: 8192 } })
const CONDITIONAL_READ = [
  requestHeader('If-None-Match', 'Entity tags the client holds: 304 Not Modified when one matches.'),
  requestHeader('If-Modified-Since', 'An HTTP date: 304 when nothing changed since (ignored with If-None-Match).'),
]
const CONDITIONAL_WRITE = [
  requestHeader('If-Match', 'The entity tag the change is based on: 412 PRECONDITION_FAILED when the resource has changed since.'),
  requestHeader('If-Unmodified-Since', 'An HTTP date: 412 when the resource changed after it (ignored with If-Match).'),
]
const PREFER_WRITE = requestHeader('Prefer', '`return=minimal` for no body (201 with Location, or 204), `return=representation` (the default).')
const PREFER_COUNT = requestHeader('Prefer', '`count=exact` adds X-Total-Count.')

/** The headers a route's answers carry by what they are: a conditional read (it may answer 304), a page, a write. */
function documentRepresentationHeaders (method: string, operation: Json, responses: Json): void {
  const conditionalRead = responses['304'] !== undefined
  const write = method === 'post' || method === 'put' || method === 'patch' || method === 'delete'
  const params = (operation.parameters ??= []) as Json[]
  // A page of a collection: an array answer to a query that takes a cursor (rows embedded in their owner are not paged).
  const paged = params.some(p => p.in === 'query' && p.name === 'cursor')
  const add = (p: Json) => { if (!params.some(q => q.in === 'header' && String(q.name).toLowerCase() === String(p.name).toLowerCase())) params.push(p) }
  if (conditionalRead) CONDITIONAL_READ.forEach(add)
  if (method === 'put' || method === 'patch' || method === 'delete') CONDITIONAL_WRITE.forEach(add)
  const ok = isObject(responses['200']) ? responses['200'] : {}
  // Arrays (pages, embedded rows) have no single modification time.
  const array = Object.values(isObject(ok.content) ? ok.content : {}).some(m => isObject(m) && isObject(m.schema) && m.schema.type === 'array')
  for (const [status, response] of Object.entries(responses)) {
    if (!isObject(response) || !/^2|^304$/.test(status)) continue
    const extra: Json = {}
    // A deletion's answer describes nothing: only its Cache-Control.
    if (method === 'delete') Object.assign(extra, { 'Cache-Control': VALIDATOR_HEADERS['Cache-Control'] })
    else if (conditionalRead || (write && status !== '202')) Object.assign(extra, VALIDATOR_HEADERS, array ? {} : LAST_MODIFIED)
    if (conditionalRead && paged && status !== '304') Object.assign(extra, PAGE_HEADERS)
    if (write && method !== 'delete' && status !== '202') Object.assign(extra, WRITE_HEADERS, method === 'post' ? REPLAY_HEADERS : {})
    if (status === '201' || status === '202') Object.assign(extra, LOCATION)
    response.headers = { ...extra, ...(isObject(response.headers) ? response.headers : {}) }
  }
  if (write && method !== 'delete' && Object.keys(responses).some(s => /^20[01]$/.test(s))) add(PREFER_WRITE)
  if (conditionalRead && paged) add(PREFER_COUNT)
  if (params.length === 0) delete operation.parameters
}

/** Text bodies (metrics, problem pages) are far smaller; the bound says that none is unbounded. */
const TEXT_BODY_MAX = 16 * 1024 * 1024
/** A route's mark, carried by @fastify/swagger onto its operation (it copies `x-` members). */
const OPTIONAL_BODY = 'x-optional-body'
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']

/** Every integer the service reads or writes fits in int64 (ids stay below 2^53). */
function annotateIntegers (node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) annotateIntegers(item)
    return
  }
  if (!isObject(node)) return
  if (node.type === 'integer' && node.format === undefined) node.format = 'int64'
  for (const value of Object.values(node)) annotateIntegers(value)
}

/**
 * The OpenAPI document's cross-cutting facts, stated once for every operation instead of per
 * route: every response may carry the rate-limit and CORS headers, every
 * operation can answer 429 and 415 (a body that is not JSON is refused on every route, also on
 * those that take none), and 429 and 503 carry Retry-After; conditional reads, pages and
 * writes name their validators, paging, Prefer and Idempotency headers. Used as @fastify/swagger's `transformObject`.
 */
export function documentCrossCutting (documentObject: { openapiObject?: unknown, swaggerObject?: unknown }): Json {
  const doc = (documentObject.openapiObject ?? documentObject.swaggerObject) as Json
  for (const pathItem of Object.values(isObject(doc.paths) ? doc.paths : {})) {
    if (!isObject(pathItem)) continue
    for (const method of METHODS) {
      const operation = pathItem[method]
      if (!isObject(operation)) continue
      const responses = (operation.responses ??= {}) as Json
      if (operation[OPTIONAL_BODY] === true) {
        delete operation[OPTIONAL_BODY]
        if (isObject(operation.requestBody)) operation.requestBody.required = false
      }
      // Added to the finished document: the Problem schema is referred to where it is published.
      for (const status of [429, 415]) {
        responses[status] ??= { description: STATUS_TEXT[status], content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } }
      }
      documentRepresentationHeaders(method, operation, responses)
      for (const [status, response] of Object.entries(responses)) {
        if (!isObject(response)) continue
        const headers = { ...(isObject(response.headers) ? response.headers : {}), ...CORS_HEADERS }
        if (/^[24]/.test(status)) Object.assign(headers, RATE_LIMIT_HEADERS)
        if (status === '429' || status === '503') Object.assign(headers, RETRY_AFTER_HEADER)
        response.headers = headers
        for (const [type, mediaType] of Object.entries(isObject(response.content) ? response.content : {})) {
          const schema = isObject(mediaType) ? mediaType.schema : undefined
          if (!isObject(schema)) continue
          if (!/json/.test(type) && schema.type === 'string' && schema.maxLength === undefined) schema.maxLength = TEXT_BODY_MAX
          // A bare JSON array answer is one page of a collection.
          if (/^2/.test(status) && schema.type === 'array' && schema.maxItems === undefined) schema.maxItems = MAX_PAGE_SIZE
        }
      }
    }
  }
  annotateIntegers(doc)
  return doc
}

/**
 * @fastify/swagger's per-route `transform`: an operation that needs a scope, or any credential, says
 * that it needs a bearer credential; an action that takes no input marks its body optional. The rest of the route's schema is documented as declared.
 */
export function documentRoute ({ schema, url, route }: { schema: object, url: string, route: { config?: unknown } }): { schema: object, url: string } {
  const config = isObject(route.config) ? route.config : {}
  const needsCredential = typeof config.requiredScope === 'string' || config.requiresCredential === true
  // @fastify/swagger marks every request body required; documentCrossCutting reads this mark.
  const optional = config.optionalBody === true ? { [OPTIONAL_BODY]: true } : {}
  if (!needsCredential || 'security' in schema) return { schema: { ...schema, ...optional }, url }
  return { schema: { ...schema, ...optional, security: [{ bearer: [] }] }, url }
}
