import { randomBytes, randomUUID } from 'node:crypto'
import { STATUS_CODES as HTTP_STATUS_TEXT } from 'node:http'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { isStoreUnavailable } from '../../store/errors.ts'
import type { Catalogue } from '../../catalogue.ts'
import { AppError, CORE_PROBLEMS, type CoreProblemCode, fieldError, type FieldError, type ProblemCode, problemSlug } from '../../errors.ts'
import { message } from '../../messages.ts'
import { type ProblemLanguage, problemLanguage } from '../../errors-i18n.ts'
import { toFieldErrors } from './validation.ts'
import { routeOf } from './route.ts'

/** Bounds of a problem's members; `buildProblem` shortens what would exceed them. */
export const PROBLEM_LIMITS = { detail: 16_384, instance: 8192, field: 1024, message: 2048, errors: 100 } as const

export const PROBLEM_MEDIA_TYPE = 'application/problem+json'

/** Seconds a client is asked to wait after a 503 of ours (overload, store down, shutdown, timeout). */
export const RETRY_AFTER_S = 5

/** A 503 of ours: the service's own trouble, so the client is told when to come back. */
export function unavailable (code: 'SERVICE_UNAVAILABLE' | 'REQUEST_TIMEOUT' = 'SERVICE_UNAVAILABLE', detail?: string): AppError {
  return new AppError(code, detail, { headers: { 'retry-after': String(RETRY_AFTER_S) } })
}

/** The one error body (RFC 9457 with the API's extension members). */
export interface Problem {
  type: string
  title: string
  status: number
  detail: string
  instance: string
  code: ProblemCode
  /** `errors[]` as sent: each message worded in the problem's language. */
  errors?: (Omit<FieldError, 'message'> & { message: string })[]
  trace_id: string
  request_id: string
}

/** The language of a problem's title and detail, from Accept-Language (en, de, fr, es; en by default). */
export function languageOf (req: FastifyRequest): ProblemLanguage {
  return problemLanguage(req.headers['accept-language'])
}

/** `text` cut to at most `max` characters (code points), marked with an ellipsis when cut. */
function clamp (text: string, max: number): string {
  if (text.length <= max) return text
  const chars = [...text]
  return chars.length <= max ? text : chars.slice(0, max - 1).join('') + '…'
}

/** The status the catalogue gives `err`'s code. */
export function statusOf (catalogue: Catalogue, err: AppError): number {
  return catalogue.problems[err.code].status
}

/**
 * Builds the problem body of `err` for `req`, in the words of `catalogue`. Members that echo what
 * the client sent (the path, a member's name) are cut to the bounds the OpenAPI document publishes
 * (PROBLEM_LIMITS).
 */
export function buildProblem (catalogue: Catalogue, req: FastifyRequest, err: AppError): Problem {
  const lang = languageOf(req)
  const def = catalogue.problems[err.code]
  const text = lang === 'en' ? { title: def.title, detail: err.detail ?? def.detail } : catalogue.translations[lang][err.code]
  const problem: Problem = {
    type: `/problems/${problemSlug(err.code)}`,
    title: text.title,
    status: def.status,
    detail: clamp(text.detail, PROBLEM_LIMITS.detail),
    // The path the client asked for (before a /v1/… alias was rewritten).
    instance: clamp((req.originalUrl ?? req.url).split('?')[0] ?? '/', PROBLEM_LIMITS.instance),
    code: err.code,
    trace_id: req.traceId,
    request_id: req.id,
  }
  if (err.errors !== undefined) {
    problem.errors = err.errors.slice(0, PROBLEM_LIMITS.errors)
      .map(e => ({
        field: clamp(e.field, PROBLEM_LIMITS.field),
        code: e.code,
        message: clamp(e.message === undefined ? catalogue.fieldCodes[e.code] : typeof e.message === 'string' ? e.message : catalogue.word(e.message, lang), PROBLEM_LIMITS.message),
      }))
  }
  return problem
}

/** Headers set for a success that must not reach an error: validators, its location, its body's. */
export const SUCCESS_ONLY_HEADERS = ['etag', 'last-modified', 'location', 'content-length', 'content-type', 'content-encoding'] as const

/** The headers every problem response carries (besides those a success set and it keeps). */
export function problemHeaders (req: FastifyRequest, err: AppError): Record<string, string> {
  return {
    'content-type': PROBLEM_MEDIA_TYPE,
    'cache-control': 'no-store',
    'content-language': languageOf(req),
    // Answered before its body arrived whole (a body past a limit, one whose end never comes):
    // the rest cannot be waited for, so the connection ends with this answer.
    ...(req.raw.complete === false ? { connection: 'close' } : {}),
    ...err.headers,
  }
}

/** Sends `err` as a problem of `catalogue`. Every error response of the service goes through here. */
export function sendProblem (catalogue: Catalogue, req: FastifyRequest, reply: FastifyReply, err: AppError): FastifyReply {
  for (const name of SUCCESS_ONLY_HEADERS) reply.removeHeader(name)
  // A Buffer, because Fastify appends "; charset=utf-8" to every JSON type sent as a string.
  return reply.code(statusOf(catalogue, err)).headers(problemHeaders(req, err)).send(Buffer.from(JSON.stringify(buildProblem(catalogue, req, err))))
}

/** A problem written on a raw socket: the status line and header block, and the body. */
export interface RawProblem { status: number, headers: Record<string, string>, head: string, body: string }

/** The path of a request target, when it is a plain origin-form path; else `/`. */
export function instanceOf (target: string): string {
  return /^(\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]{0,200})/.exec(target)?.[1] ?? '/'
}

/**
 * The problem for answers given where Fastify has no request (Node's parser refused it, or Node
 * answers itself): the same body and headers as sendProblem's, in English, with a new trace, and
 * `Connection: close`, since nothing more is read from that connection.
 */
export function rawProblem (code: CoreProblemCode, target: string, detail?: string, headers: Record<string, string> = {}): RawProblem {
  const p = CORE_PROBLEMS[code]
  const problem: Problem = {
    type: `/problems/${problemSlug(code)}`,
    title: p.title,
    status: p.status,
    detail: detail ?? p.detail,
    instance: instanceOf(target),
    code,
    trace_id: randomBytes(16).toString('hex'),
    request_id: randomUUID(),
  }
  const body = JSON.stringify(problem)
  const fields: Record<string, string> = {
    'Content-Type': PROBLEM_MEDIA_TYPE,
    'Content-Length': String(Buffer.byteLength(body)),
    'Content-Language': 'en',
    'Cache-Control': 'no-store',
    'X-Request-Id': problem.request_id,
    traceparent: `00-${problem.trace_id}-${randomBytes(8).toString('hex')}-01`,
    ...headers,
    Connection: 'close',
  }
  const head = `HTTP/1.1 ${p.status} ${HTTP_STATUS_TEXT[p.status]}\r\n${Object.entries(fields).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`
  return { status: p.status, headers: fields, head, body }
}

const FRAMEWORK_CODES: Record<string, ProblemCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'MALFORMED_JSON',
  FST_ERR_CTP_INVALID_JSON_BODY: 'MALFORMED_JSON',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'BAD_REQUEST',
  FST_ERR_BAD_URL: 'BAD_REQUEST',
  FST_ERR_INVALID_URL: 'BAD_REQUEST',
  FST_ERR_RATE_LIMIT_EXCEEDED: 'RATE_LIMITED',
  FST_UNDER_PRESSURE: 'SERVICE_UNAVAILABLE',
}

const STATUS_CODES: Record<number, ProblemCode> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHENTICATED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  406: 'NOT_ACCEPTABLE',
  413: 'PAYLOAD_TOO_LARGE',
  414: 'URI_TOO_LONG',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMITED',
  431: 'HEADERS_TOO_LARGE',
  503: 'SERVICE_UNAVAILABLE',
}

/** A store used after close() (shutdown under way): Kysely's and better-sqlite3's words for it. */
function isStoreClosed (error: unknown): boolean {
  const message = (error as { message?: unknown } | null)?.message
  return typeof message === 'string' && (message.includes('driver has already been destroyed') || message === 'The database connection is not open')
}

function hasBodyBytes (req: FastifyRequest): boolean {
  const length = req.headers['content-length']
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined
}

/** Maps anything thrown to the catalogue; unknown errors become 500 and never show their text. */
export function toAppError (error: unknown, req?: FastifyRequest): AppError {
  if (error instanceof AppError) return error
  const err = error as FastifyError & { validation?: unknown[], validationContext?: string }
  if (Array.isArray(err.validation)) {
    const context = err.validationContext ?? 'body'
    // No body bytes at all: say that one is required, not that "undefined" has the wrong type.
    if (context === 'body' && req !== undefined && req.body == null && !hasBodyBytes(req)) {
      return new AppError('VALIDATION_FAILED', undefined, { errors: [fieldError('', 'REQUIRED', message('BODY_REQUIRED'))] })
    }
    return new AppError('VALIDATION_FAILED', undefined, { errors: toFieldErrors(err.validation as never[], context) })
  }
  if (isStoreUnavailable(error) || isStoreClosed(error)) {
    return unavailable('SERVICE_UNAVAILABLE', 'The store is not reachable. Retry after the time in Retry-After.')
  }
  const mapped = err.code !== undefined ? FRAMEWORK_CODES[err.code] : undefined
  if (mapped) return new AppError(mapped, mapped === 'MALFORMED_JSON' && err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ? 'The request body is empty; send a JSON document.' : undefined)
  if (error instanceof SyntaxError && err.statusCode === 400) return new AppError('MALFORMED_JSON')
  const status = typeof err.statusCode === 'number' ? err.statusCode : 500
  if (status >= 400 && status < 500) return new AppError(STATUS_CODES[status] ?? 'BAD_REQUEST')
  if (status === 503) return new AppError('SERVICE_UNAVAILABLE')
  return new AppError('INTERNAL_ERROR')
}

/** The error handler: one place that turns every failure into a problem, and logs 5xx with context. */
export const problemsPlugin = fp(async function problems (app: FastifyInstance, { catalogue }: { catalogue: Catalogue }) {
  app.setErrorHandler(function errorHandler (error, req, reply) {
    const appError = toAppError(error, req)
    const status = statusOf(catalogue, appError)
    if (status >= 500) {
      if (appError.code === 'INTERNAL_ERROR') req.log.error({ err: error, route: routeOf(req).url }, 'request failed')
      else req.log.warn({ err: error, code: appError.code }, 'service unavailable')
      if (!('retry-after' in appError.headers) && status === 503) reply.header('retry-after', String(RETRY_AFTER_S))
    }
    return sendProblem(catalogue, req, reply, appError)
  })
}, { name: 'problems' })
